"""Pages that need JavaScript: one headless Chromium per worker process, only where needed.

``render: http`` (the default) never starts a browser; ``browser`` renders every HTML page;
``auto`` renders a page only when :func:`shell_reason` says its plain HTML is an empty
JavaScript shell.  In every mode the page's document is first fetched by the plain
:class:`~sitemap_crawler.fetch.client.Fetcher` (robots.txt, the host gate, retries,
conditional revalidation, size limits): a 304 or an error never reaches the browser.

Rules this module keeps:

* B1. The browser never asks the server for the document again: the navigation to the
  fetched URL is answered (``route.fulfill``) with the bytes and headers the Fetcher got, so
  validators, redirects and limits are the Fetcher's.  The page's own requests (scripts,
  XHR, styles) go out while the worker holds a lease from the same host gate as plain
  fetches (``Fetcher.lease_for``: blocks and Crawl-delay obeyed), taken around the whole
  navigation.
* B2. Nothing leaves for a place that is not the site's: every request of the page is
  routed through :meth:`Browser._route` and aborted unless it is on one of the site's origins
  (host, scheme and port, as redirects: client.py F9), and Chromium's host resolver maps each
  of the site's names to the address the address policy checked (netguard.py; so a DNS
  answer that changes later cannot move it) and every other name to "not found"
  (``--host-resolver-rules``), which also covers what routing does not see (WebSockets,
  prefetches).  The document itself is the Fetcher's (B1), under the policy.  Images, fonts
  and media are aborted when ``browser.block`` lists them.
* B3. No orphaned browser: Playwright's driver (node) and Chromium are started through a tiny
  launcher that sets ``PR_SET_PDEATHSIG`` = SIGKILL before ``exec``, so kill -9 of the worker
  kills the driver, whose death kills Chromium; Chromium's own helpers exit with it.
* B4. One browser per worker process, started on first use (``auto`` on a static site never
  starts one), restarted every ``browser.restart_every`` pages and after a crash; each page
  has ``browser.timeout`` for navigation and wait together.
* B5. Waiting uses Playwright's own event loop, which releases the GIL: the heartbeat thread
  keeps beating while a slow page renders.

May import: the base modules and ``protocol`` (through ``client``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import lxml.html

from sitemap_crawler.config import Settings
from sitemap_crawler.errors import CrawlError
from sitemap_crawler.fetch.client import Fetcher, _GaveUp
from sitemap_crawler.protocol.hostgate import Interrupted
from sitemap_crawler.xpath import XPath

log = logging.getLogger(__name__)

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_CHROMIUM = "apt-get install chromium"
INSTALL_EXTRA = "pip install 'sitemap-crawler[browser]'"
# Elements single-page apps mount into; empty in the HTML the server sends.
APP_ROOT_IDS = ("root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app",
                "application", "react-root", "vue-app")
_NOSCRIPT_HINT = re.compile(r"javascript|enable\s+js|\bjs\b", re.I)
_NOT_TEXT = ("script", "style", "noscript", "template", "svg")
# response headers not passed on when the fetched document is handed to the browser: the
# body is already decoded and complete
_HOP = {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}


class BrowserMissing(CrawlError):
    """No Chromium or no Playwright: the message names what to install."""


# -- is this page an empty JavaScript shell? -----------------------------------------------------

def shell_reason(html: str | Any, min_chars: int = 100) -> str | None:
    """Why the plain HTML looks like an empty JavaScript shell, or None when it does not.

    A shell has scripts to run and, outside them, next to no text: fewer than ``min_chars``
    characters, or an app root (``<div id="root">``, ``#__next``, ``#app``, ...) that is
    empty, or a ``<noscript>`` asking for JavaScript.  A short page without scripts is just a
    short page: no browser would find more in it.

    ``html`` is the page's text or its already parsed lxml tree (the converter's: the worker
    asks about every page, and a second parse plus a Python walk of every element cost
    ~10 ms of a 65 KB page, a third of its CPU, issue 13).
    """
    if isinstance(html, str):
        try:
            doc = lxml.html.document_fromstring(html)
        except (ValueError, lxml.etree.ParserError):
            return None
    else:
        doc = html
        if doc is None:
            return None
    scripts = [s for s in doc.iter("script")
               if (s.get("type") or "text/javascript").strip().lower() in (
                   "", "module", "text/javascript", "application/javascript")]
    if not scripts:
        return None
    hint = any(_NOSCRIPT_HINT.search("".join(n.itertext())) for n in doc.iter("noscript"))
    roots = [e for e in (a.getparent() for a in _IDS(doc) if a in _APP_ROOT_SET)
             if not _chars(e, enough=1)]
    body = doc.find("body")
    # exact below min_chars (it is in the reason); past 3 * min_chars nothing depends on it
    chars = _chars(body, enough=3 * min_chars) if body is not None else 0
    why = []
    if chars < min_chars:
        why.append(f"{chars} chars of text")
    if roots:
        why.append(f"empty #{roots[0].get('id')}")
    if hint:
        why.append("<noscript> asks for JavaScript")
    if chars < min_chars or roots or (hint and chars < 3 * min_chars):
        return "shell: " + ", ".join(why)
    return None


# every id attribute, in document order (libxml2 finds them in ~0.05 ms on a 65 KB page; an
# XPath comparing each element with the ten names took 1.9 ms)
_IDS = XPath("//@id")
_APP_ROOT_SET = frozenset(APP_ROOT_IDS)


def _words(parts: Any) -> tuple[int, int]:
    """(characters in words, words) of text pieces joined by spaces."""
    words = " ".join(parts).split()
    return len("".join(words)), len(words)


def _chars(el: Any, enough: int = 0) -> int:
    """``len(_text(el))`` without building the text in a Python walk: libxml2's itertext over
    the element, less the pieces inside script/style/noscript/template/svg.  Pieces are joined
    with spaces, so no word spans two of them and the counts subtract exactly.

    With ``enough``, the count may stop once it is sure to reach ``enough`` and return a
    number >= ``enough`` (not the exact one): a page's first few hundred characters decide
    whether it is a shell, and the rest need not be counted."""
    if not isinstance(el.tag, str) or el.tag.lower() in _NOT_TEXT:
        return 0
    hidden = [sub for sub in el.iter(*_NOT_TEXT) if not _inside(sub, el)]
    if enough > 0:
        # each hidden word adds at most twice its length to chars + words
        slack = 2 * sum(len("".join(sub.itertext())) for sub in hidden) + 1
        seen = 0
        for piece in el.itertext():
            words = piece.split()
            seen += len(words) + sum(map(len, words))
            if seen - slack >= enough:
                return seen - slack
    chars, words = _words(el.itertext())
    for sub in hidden:
        c, w = _words(sub.itertext())
        chars, words = chars - c, words - w
    return chars + words - 1 if words > 0 else 0


def _inside(sub: Any, el: Any) -> bool:
    """Whether a hidden ancestor of ``sub`` lies below ``el`` (not above it)."""
    for a in sub.iterancestors():
        if a is el:
            return False
        if isinstance(a.tag, str) and a.tag.lower() in _NOT_TEXT:
            return True
    return False


def _text(el: Any) -> str:
    """The visible text of ``el``: scripts, styles, noscript and templates left out (the
    definition :func:`_chars` counts; tests compare the two)."""
    parts: list[str] = []

    def walk(e: Any) -> None:
        if isinstance(e.tag, str) and e.tag.lower() in _NOT_TEXT:
            return
        if e.text and isinstance(e.tag, str):
            parts.append(e.text)
        for child in e:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(el)
    return " ".join(" ".join(parts).split())


# -- finding what to run ----------------------------------------------------------------------

def find_chromium(settings: Settings) -> str:
    """The Chromium to start: ``browser.executable_path`` if set, else the first of
    chromium, chromium-browser, google-chrome on PATH; a one-line error naming the install
    command when there is none."""
    path = settings.browser.executable_path
    if path:
        found = shutil.which(path) or None
        if found is None:
            raise BrowserMissing(f"browser.executable_path: {path} is not an executable "
                                 f"file (install Chromium with: {INSTALL_CHROMIUM})")
        return found
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissing(f"render: {settings.render} needs Chromium and none was found "
                         f"({', '.join(CHROMIUM_NAMES[:3])} on PATH, or set "
                         f"browser.executable_path): install it with: {INSTALL_CHROMIUM}")


def require_browser(settings: Settings) -> str | None:
    """Check, before any worker starts, that a site which may render has what it needs:
    Playwright and a Chromium.  None for ``render: http``."""
    if settings.render == "http":
        return None
    if importlib.util.find_spec("playwright") is None:
        raise BrowserMissing(f"render: {settings.render} needs Playwright: {INSTALL_EXTRA} "
                             f"(and a Chromium: {INSTALL_CHROMIUM})")
    return find_chromium(settings)


_LAUNCHER = """#!{python} -S
# sitemap-crawler (fetch/browser.py B3): die with the parent, then become {target}
import ctypes, os, signal, sys
ppid = os.getppid()
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != ppid:
    os._exit(1)
os.execv({target!r}, [{target!r}] + sys.argv[1:])
"""


def death_launcher(target: str) -> str:
    """A tiny executable that sets PR_SET_PDEATHSIG (SIGKILL) and execs ``target`` (B3).

    Written once per (python, target) into a private per-user directory; Playwright takes
    it as the node or Chromium executable.  Linux only: elsewhere ``target`` itself."""
    if not sys.platform.startswith("linux") or not sys.executable:
        return target
    text = _LAUNCHER.format(python=sys.executable, target=os.path.realpath(target))
    name = "launch-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"sitemap-crawler-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = folder.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            folder = Path(tempfile.mkdtemp(prefix="sitemap-crawler-"))
        path = folder / name
        if not path.exists():
            tmp = folder / f".{name}.{os.getpid()}.{threading.get_ident()}"
            tmp.write_text(text)
            tmp.chmod(0o700)
            os.replace(tmp, path)
        return str(path)
    except OSError as e:
        log.warning("cannot write the browser launcher (%s); a killed worker may leave its "
                    "browser running", e)
        return target


def _bundled_node() -> str | None:
    """Playwright's own node, which its driver runs on (the launcher wraps it, B3)."""
    if os.environ.get("PLAYWRIGHT_NODEJS_PATH"):
        return os.environ["PLAYWRIGHT_NODEJS_PATH"]
    spec = importlib.util.find_spec("playwright")
    if spec is None or spec.origin is None:
        return None
    node = Path(spec.origin).parent / "driver" / "node"
    return str(node) if node.is_file() else None


# -- rendering --------------------------------------------------------------------------------

@dataclass
class Rendered:
    """What one page's rendering came to: ``outcome`` ok (``html`` is the rendered DOM),
    failed (``reason``: render_timeout, render_error, host_gave_up) or interrupted."""

    outcome: str
    html: str = ""
    reason: str | None = None
    elapsed: float = 0.0
    blocked: int = 0  # requests of the page aborted (other hosts, blocked types)


@dataclass
class _Doc:
    url: str
    body: bytes
    headers: dict[str, str]
    status: int


def _canon(url: str) -> str:
    p = urlsplit(url)
    return urlunsplit((p.scheme.lower(), p.netloc.lower(), p.path or "/", p.query, ""))


class Browser:
    """One headless Chromium for one worker process (B4); used by one thread at a time."""

    def __init__(self, settings: Settings, fetcher: Fetcher, stop: threading.Event,
                 allowed_hosts: set[str]) -> None:
        self.settings = settings
        self.b = settings.browser
        self.fetcher = fetcher
        self.stop = stop
        self.allowed = {h.lower() for h in allowed_hosts}
        self.block = set(self.b.block)
        self.launches = 0
        self.pages = 0  # rendered by the current browser
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._page: Any = None
        self._doc: _Doc | None = None
        self._blocked = 0

    # -- lifecycle ------------------------------------------------------------------------
    def _start(self) -> None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise BrowserMissing(f"render: {self.settings.render} needs Playwright: "
                                 f"{INSTALL_EXTRA}") from None
        chromium = find_chromium(self.settings)
        if self._pw is None:
            node = _bundled_node()
            old = os.environ.get("PLAYWRIGHT_NODEJS_PATH")
            if node:
                os.environ["PLAYWRIGHT_NODEJS_PATH"] = death_launcher(node)
            try:
                self._pw = sync_playwright().start()
            finally:
                if old is None:
                    os.environ.pop("PLAYWRIGHT_NODEJS_PATH", None)
                else:
                    os.environ["PLAYWRIGHT_NODEJS_PATH"] = old
        rules = self.resolver_rules()
        self._browser = self._pw.chromium.launch(
            executable_path=death_launcher(chromium), headless=self.b.headless,
            args=[f"--host-resolver-rules={rules}", "--disable-dev-shm-usage"],
            timeout=max(30_000, self.b.timeout * 1000))
        self._context = self._browser.new_context(
            user_agent=self.b.user_agent or self.settings.user_agent,
            viewport={"width": self.b.viewport.width, "height": self.b.viewport.height},
            service_workers="block", accept_downloads=False)
        self._context.route("**/*", self._route)
        self._page = self._context.new_page()
        self.launches += 1
        self.pages = 0
        log.info("started %s (%s) for rendering", self._browser.version, chromium)

    def resolver_rules(self) -> str:
        """Chromium's ``--host-resolver-rules`` (B2): each site name to its checked address,
        the first rule that matches wins."""
        rules = []
        for h in sorted(self.allowed):
            if ":" in h:
                continue  # host:port, or an IPv6 literal: no name to map
            address = self.fetcher.policy.address_for(h)
            if address is None:
                rules.append(f"MAP {h} ~NOTFOUND")
            else:
                rules.append(f"MAP {h} {f'[{address}]' if ':' in address else address}")
        return ", ".join([*rules, "MAP * ~NOTFOUND"])

    def _stop_browser(self) -> None:
        browser, self._browser, self._context, self._page = self._browser, None, None, None
        if browser is not None:
            with contextlib.suppress(Exception):  # it may have crashed already
                browser.close()

    def close(self) -> None:
        self._stop_browser()
        if self._pw is not None:
            with contextlib.suppress(Exception):
                self._pw.stop()
            self._pw = None

    # -- one page -------------------------------------------------------------------------
    def render(self, url: str, body: bytes, headers: dict[str, str], status: int) -> Rendered:
        """Render the fetched document ``body`` of ``url`` (the final URL after redirects);
        retried up to ``max_retries`` times after a timeout or a crash (the browser is
        restarted after a crash)."""
        started = time.monotonic()
        res = Rendered("failed", reason="render_error")
        for attempt in range(self.settings.max_retries + 1):
            if self.stop.is_set():
                res = Rendered("interrupted", reason="stopped")
                break
            res = self._render_once(url, _Doc(url, body, headers, status))
            if res.outcome != "failed" or res.reason == "host_gave_up":
                break
            log.info("%s: %s (attempt %d)", url, res.reason, attempt + 1)
        res.elapsed = time.monotonic() - started
        return res

    def _render_once(self, url: str, doc: _Doc) -> Rendered:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        if self._browser is not None and self.b.restart_every and \
                self.pages >= self.b.restart_every:
            log.info("restarting the browser after %d pages", self.pages)
            self._stop_browser()
        if self._browser is None or not self._browser.is_connected():
            self._stop_browser()
            try:
                self._start()
            except PlaywrightError as e:  # e.g. a Chromium that lacks its libraries
                self._stop_browser()
                raise BrowserMissing(f"cannot start Chromium for render: "
                                     f"{self.settings.render}: "
                                     f"{str(e).strip().splitlines()[0]}") from None
        page = self._page
        timeout_ms = self.b.timeout * 1000
        wait = self.b.wait
        self._doc, self._blocked = doc, 0
        t0 = time.monotonic()
        try:
            with self.fetcher.lease_for(url):
                until = wait if wait in ("load", "domcontentloaded", "networkidle") else "load"
                page.goto(url, wait_until=until, timeout=timeout_ms)
                left = max(1.0, timeout_ms - (time.monotonic() - t0) * 1000)
                if until != wait:  # a CSS selector
                    page.wait_for_selector(wait, timeout=left, state="attached")
                html = page.content()
                if until == wait != "networkidle" and shell_reason(
                        html, self.settings.min_content_chars):
                    # still empty at load: the app may be fetching its content
                    with contextlib.suppress(PlaywrightTimeout):
                        page.wait_for_load_state("networkidle", timeout=left)
                    html = page.content()
            self.pages += 1
            return Rendered("ok", html=html, blocked=self._blocked)
        except PlaywrightTimeout:
            self.pages += 1
            with contextlib.suppress(Exception):  # leave the page for the next navigation
                page.goto("about:blank", timeout=5000)
            return Rendered("failed", reason="render_timeout", blocked=self._blocked)
        except Interrupted:
            return Rendered("interrupted", reason="stopped")
        except _GaveUp:
            return Rendered("failed", reason="host_gave_up")
        except PlaywrightError as e:
            log.warning("%s: the browser failed: %s", url, str(e).splitlines()[0])
            self._stop_browser()
            return Rendered("failed", reason="render_error", blocked=self._blocked)
        finally:
            self._doc = None

    def _allowed(self, url: str, page: str) -> bool:
        p = urlsplit(url)
        if p.scheme in ("data", "blob", "about"):
            return True
        if p.scheme not in ("http", "https"):
            return False
        return self.fetcher.same_site(url, page)

    def _route(self, route: Any) -> None:
        """Every request of the page (B1, B2)."""
        req = route.request
        doc = self._doc
        if doc is not None and req.is_navigation_request() and req.method == "GET" \
                and _canon(req.url) == _canon(doc.url):
            headers = {k: v for k, v in doc.headers.items() if k not in _HOP}
            route.fulfill(status=doc.status, headers=headers, body=doc.body)
            return
        if not self._allowed(req.url, doc.url if doc is not None else "") \
                or req.resource_type in self.block:
            self._blocked += 1
            route.abort("blockedbyclient")
            return
        route.continue_()
