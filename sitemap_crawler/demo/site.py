"""A documentation-like website generated in memory and served on 127.0.0.1.

Why it exists: ``sitemap-crawler demo`` must show the whole tool working on a fresh machine
without touching the internet, and the tests need a site whose every quirk is known in advance.
So the site is deterministic (same ``seed`` -> same bytes), realistic enough to exercise the
converter (header/sidebar/footer chrome around an article with code, tables, lists, images),
and it carries one example of each thing a crawler meets in the wild (redirect, 404 in the
sitemap, robots-disallowed page, canonical duplicate, noindex, markdown, PDF, windows-1252,
non-ASCII text and URL).

Generations model re-crawls: going from generation ``g`` to ``g + 1`` rewrites the article of
about 5 % of the pages, removes 2 pages (410 afterwards) and adds 3.  ``changed_since``,
``removed_since`` and ``added_since`` say exactly which URL paths an incremental crawl must
find.  The footer carries a clock that differs on every request, while ``ETag`` and
``Last-Modified`` are computed without it, so a crawler that hashes the whole body would see
false changes and one that hashes the article (or uses validators) would not.
"""

from __future__ import annotations

import dataclasses
import email.utils
import gzip
import hashlib
import html
import json
import random
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

__all__ = [
    "SECTIONS",
    "DemoServer",
    "DemoSite",
    "LoggedRequest",
    "Page",
    "Resource",
    "ServerStats",
    "generate",
    "serve",
]

SITE_NAME = "Acme Docs"
SECTIONS: tuple[str, ...] = ("guide", "reference", "api", "tutorials", "blog")
# Share of the ordinary pages that goes to each section (sums to 1).
_SECTION_WEIGHTS = {"guide": 0.2, "reference": 0.2, "api": 0.25, "tutorials": 0.15, "blog": 0.2}
_CHANGEFREQ = {"guide": "weekly", "reference": "monthly", "api": "weekly", "tutorials": "monthly",
               "blog": "yearly", "": "daily", "private": "never"}
_PRIORITY = {"guide": "0.8", "reference": "0.6", "api": "0.7", "tutorials": "0.6",
             "blog": "0.4", "": "1.0", "private": "0.1"}
_PINNED_PER_SECTION = 9  # pages per section shown in the sidebar (never removed)
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)  # generation g is published at _EPOCH + g days
_CLOCK_MARK = "\x00CLOCK\x00"

# Page kinds.  Each designed special page below says in a comment what it exercises.
HTML = "html"
MARKDOWN = "markdown"
PDF = "pdf"


@dataclass(frozen=True)
class Page:
    """One URL of the site at one generation (the article ``version`` bumps on each change)."""

    id: int
    path: str  # URL path as it appears on the wire and in the sitemap (percent-encoded)
    title: str
    section: str  # one of SECTIONS, "" for the home page, "private"
    kind: str  # HTML, MARKDOWN or PDF
    version: int  # 0 at creation, +1 each time a generation rewrites the article
    lastmod: datetime  # when this version was published (sitemap <lastmod>, Last-Modified)
    pinned: bool = False  # in the sidebar and llms.txt, so never removed (no broken links)
    in_sitemap: bool = True
    charset: str = "utf-8"
    lang: str = "en"
    canonical: str | None = None  # path of the canonical page, if this one is a duplicate
    noindex: bool = False
    flavour: str = ""  # "", "i18n", "ja", "cafe", "cp1252", "private": which text bank to use


class Resource(NamedTuple):
    """What the server answers for one path before conditional-request handling."""

    status: int
    content_type: str
    body: bytes
    etag: str | None = None  # strong validator, computed without the footer clock
    last_modified: datetime | None = None
    headers: dict[str, str] | None = None


class LoggedRequest(NamedTuple):
    method: str
    path: str  # raw request target, as sent
    status: int
    headers: dict[str, str]  # lower-cased names


@dataclass(frozen=True)
class ServerStats:
    requests: int
    ok: int  # 200 answers
    not_modified: int  # 304 answers
    bytes_sent: int  # body bytes (headers not counted)
    by_status: dict[int, int] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Designed special URLs (all present in every generation; never changed, removed or added).
# --------------------------------------------------------------------------------------------
HOME = "/"
GETTING_STARTED = "/guide/getting-started.html"
INSTALLATION = "/guide/installation.html"
# Exercises redirects: listed in the sitemap, answers 301 to GETTING_STARTED.
REDIRECT_FROM = "/guide/getting-started-old.html"
# Exercises a sitemap entry whose page was removed: always 404.
MISSING = "/blog/retired-post.html"
# Exercises robots.txt: listed in the sitemap, disallowed by robots.txt (served 200 if fetched,
# so a test can see from the request log that a crawler fetched it anyway).
PRIVATE = "/private/roadmap.html"
# Exercises <link rel=canonical>: a printable duplicate of INSTALLATION.
CANONICAL_DUP = "/guide/installation-print.html"
# Exercises <meta name=robots content=noindex>.
NOINDEX = "/reference/internal-notes.html"
# Exercises non-ASCII text (é, ü, 日本語) in UTF-8.
I18N = "/guide/internationalisation.html"
# Exercises a whole page in Japanese (lang="ja").
JAPANESE = "/guide/ja/quickstart.html"
# Exercises a non-ASCII URL path (percent-encoded in the sitemap) and non-ASCII text.
CAFE = "/blog/" + quote("café-und-müsli-zürich-meetup") + ".html"
# Exercises charset detection: windows-1252 bytes, declared only by a <meta http-equiv> tag
# (the Content-Type header carries no charset).
CP1252 = "/reference/legacy-encoding.html"
# Exercise text/markdown responses (listed in the sitemap and in llms.txt).
MD_PAGES = ("/guide/quickstart.md", "/api/overview.md", "/tutorials/first-crawl.md")
# Exercises llms.txt discovery: a markdown page linked only from llms.txt, not the sitemap.
MD_LLMS_ONLY = "/tutorials/cheatsheet.md"
# Exercises a binary, non-HTML URL listed in the sitemap (application/pdf).
PDF_PATH = "/reference/manual.pdf"

SPECIAL_PATHS: dict[str, str] = {
    "home": HOME, "redirect": REDIRECT_FROM, "redirect_target": GETTING_STARTED,
    "missing": MISSING, "private": PRIVATE, "canonical": CANONICAL_DUP,
    "canonical_target": INSTALLATION, "noindex": NOINDEX, "i18n": I18N, "japanese": JAPANESE,
    "non_ascii_path": CAFE, "cp1252": CP1252, "markdown_llms_only": MD_LLMS_ONLY, "pdf": PDF_PATH,
}

# --------------------------------------------------------------------------------------------
# Text banks: enough variety that pages look like documentation, all deterministic.
# --------------------------------------------------------------------------------------------
_NOUNS = ("crawler", "sitemap", "worker", "ticket", "request", "response", "header", "cache",
          "index", "session", "queue", "timeout", "retry rule", "endpoint", "token", "client",
          "server", "configuration", "schema", "record", "batch", "stream", "buffer", "parser",
          "handler", "plugin", "adapter", "pipeline", "snapshot", "manifest", "bucket", "region",
          "cluster", "node", "shard", "replica", "lease", "heartbeat", "journal", "validator",
          "webhook", "rate limit", "connection pool", "proxy", "certificate", "namespace")
_AN_RE = re.compile(r"\b([Aa]) (?=[aeiou])")
_VERBS = ("configure", "validate", "fetch", "parse", "retry", "schedule", "cache", "serialise",
          "export", "import", "rotate", "throttle", "index", "resolve", "normalise", "merge",
          "publish", "replay", "compress", "inspect", "monitor", "deploy", "migrate", "reuse")
_GERUNDS = ("Configuring", "Understanding", "Tuning", "Debugging", "Scaling", "Securing",
            "Monitoring", "Migrating", "Deploying", "Testing", "Extending", "Customising")
_ADJS = ("incremental", "persistent", "concurrent", "idempotent", "lightweight", "default",
         "optional", "deprecated", "experimental", "stable", "distributed", "cached", "strict",
         "lazy", "polite", "atomic", "resumable", "shared", "per-host", "global")
_MODULES = ("fetch", "index", "tickets", "workers", "config", "convert", "output", "discovery",
            "journal", "hostgate", "urls", "cli", "auth", "storage", "events")
_CLASSES = ("Session", "Client", "UrlIndex", "Ticket", "Worker", "Settings", "Converter",
            "Writer", "Sitemap", "Lease", "HostGate", "Journal", "Pool", "Backoff", "Event")
_METHODS = ("fetch", "claim", "release", "refresh", "lookup", "update", "close", "open",
            "flush", "convert", "write", "discover", "expand", "acquire", "wait")
_AUTHORS = ("Priya Raman", "Zoë Brontë", "Jürgen Müller", "José Núñez", "Mei Tanaka",
            "Olusegun Adebayo", "Sara Lindqvist", "Tom Baker", "Chloé Dubois", "Ana Kovač")
_CITIES = ("Berlin", "Lisbon", "Osaka", "Toronto", "Nairobi", "Melbourne", "Bogotá", "Kraków")
_I18N_SENTENCES = (
    "Die Übersetzung für „Größe“ und „Bücher“ ist fertig; bitte prüfen Sie die Umlaute ä, ö, ü.",
    "Le café est prêt à côté de l'entrée : déjà testé, élégant et très rapide.",
    "日本語のドキュメントは毎日更新されます。検索インデックスも自動で再構築されます。",
    "Señales de vida: el niño añadió una sección sobre la configuración del año próximo.",
    "Ærø, Øresund og Åbenrå: nordiske tegn skal overleve konverteringen uændret.",
    "Der Crawler überspringt Seiten, deren Inhalt sich nicht geändert hat — schön effizient.",
)
_JA_SENTENCES = (
    "このガイドでは、サイトマップからすべてのページを取得する方法を説明します。",
    "ワーカーはチケットを取得し、ページを丁寧に取得してマークダウンに変換します。",
    "設定ファイルは YAML 形式で、サイトごとに上書きできます。",
    "差分クロールでは ETag と Last-Modified を使って変更のないページを省略します。",
    "日本語の見出しや表も、そのまま正しく変換されるはずです。",
)
_CP1252_SENTENCES = (
    "This page predates our move to UTF-8 \u2014 it is still served as windows-1252.",
    "Smart quotes \u201clike these\u201d and \u2018these\u2019 are single bytes here.",
    "Prices were quoted in \u20ac (euro) and \u00a3; the caf\u00e9 menu said na\u00efve "
    "cr\u00e8me br\u00fbl\u00e9e\u2026",
    "Trademarks\u2122 and \u00a9 notices, \u00bd-width spaces and \u00b1 tolerances all fit in one "
    "byte each.",
)
_SENTENCES = (
    "The {noun} {verb}s each {noun2} before the {adj} {noun3} is written to disk.",
    "Use <code>{ident}</code> to {verb} the {noun} when the {noun2} is {adj}.",
    "By default the {noun} is {adj}; set <code>{ident}</code> to change it.",
    "When a {noun} fails, the {noun2} will {verb} it with an exponential back-off.",
    "See <a href=\"{link}\">{link_title}</a> for how the {noun} interacts with the {noun2}.",
    "A {adj} {noun} keeps its {noun2} in memory, so repeated calls are cheap.",
    "You can {verb} the {noun} from the command line or from Python code.",
    "Each {noun} has exactly one {noun2}; sharing them between processes is not supported.",
    "If <code>{ident}</code> is omitted, the {noun} falls back to the {adj} {noun2}.",
    "The {noun2} is checked first, then the {noun}, and only then the {noun3}.",
    "Large sites benefit from a {adj} {noun}, which lets several workers {verb} in parallel.",
    "Note that the {noun} never will {verb} a {noun2} that robots.txt disallows.",
)
_SECTION_INTRO = {
    "guide": "Guides explain how the pieces fit together, one task at a time.",
    "reference": "The reference lists every setting, command and file format.",
    "api": "The API reference documents every public module, class and function.",
    "tutorials": "Tutorials walk you through complete projects from start to finish.",
    "blog": "News, release notes and stories from the team.",
}
_SECTION_TITLE = {"guide": "Guide", "reference": "Reference", "api": "API",
                  "tutorials": "Tutorials", "blog": "Blog"}
_PNG = bytes.fromhex(  # a valid 1x1 transparent PNG, for <img> links
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082")


def _slugify(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-") or "page"


def _httpdate(t: datetime) -> str:
    return email.utils.format_datetime(t.astimezone(UTC).replace(microsecond=0), usegmt=True)


def _w3c(t: datetime) -> str:
    return t.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------
# A JavaScript-rendered section (render: browser | auto): empty shells whose text app.js writes
# from the JSON each page carries.  Listed only in its own sitemap, which is not in the sitemap
# index: the demo adds it as a source when a browser is installed (demo/run.py), so the rest of
# the site, and everything the tests count on it, is the same with or without one.
# --------------------------------------------------------------------------------------------
APP_SITEMAP = "/sitemap-app.xml"
APP_SCRIPT = "/app/app.js"
APP_PAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "/app/index.html": ("Acme Console", (
        "The Acme Console is a single-page application: the server sends an empty shell and "
        "this text is written by JavaScript in your browser.",
        "A crawler that only reads the HTML sees nothing here; sitemap-crawler with render: "
        "auto notices the empty shell and renders the page in headless Chromium.")),
    "/app/dashboards.html": ("Dashboards", (
        "Dashboards show the crawl rate, the share of pages answered 304 and the hosts that "
        "are blocked right now, refreshed every five seconds.",
        "Each panel can be pinned, resized and exported as a PNG or as the JSON it is drawn "
        "from.")),
    "/app/alerts.html": ("Alerts", (
        "An alert fires when a host keeps failing after its retries: the console lists the "
        "URLs, the last status and when the host will be tried again.",
        "Alerts are sent by e-mail or to a webhook; quiet hours hold them until morning.")),
}
_APP_JS = b"""// Acme Console: renders the page from its JSON (a demo of a JavaScript-only page)
(function () {
  var data = JSON.parse(document.getElementById('page-data').textContent);
  var root = document.getElementById('root');
  var html = '<nav class="app-nav">' + data.nav.map(function (n) {
    return '<a href="' + n[0] + '">' + n[1] + '</a>';
  }).join(' | ') + '</nav><main><article><h1>' + data.title + '</h1>';
  data.paragraphs.forEach(function (p) { html += '<p>' + p + '</p>'; });
  root.innerHTML = html + '</article></main>';
  document.title = data.title + ' - Acme Console';
})();
"""


def _app_shell(path: str) -> bytes:
    title, paragraphs = APP_PAGES[path]
    data = json.dumps({"title": title, "paragraphs": paragraphs,
                       "nav": [[p, t] for p, (t, _) in APP_PAGES.items()]})
    data = data.replace("<", "\\u003c")  # no "</script>" inside the script
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)} - Acme Console</title></head>\n<body>\n"
            "<noscript>You need to enable JavaScript to run the Acme Console.</noscript>\n"
            "<div id=\"root\"></div>\n"
            f"<script id=\"page-data\" type=\"application/json\">{data}"
            f"</script>\n<script src=\"{APP_SCRIPT}\"></script>\n</body></html>\n").encode()


def _etag(*parts: bytes) -> str:
    h = hashlib.sha1()
    for p in parts:
        h.update(p)
    return '"' + h.hexdigest()[:24] + '"'


def _title_for(section: str, rng: random.Random) -> str:
    return _AN_RE.sub(r"\1n ", _title(section, rng))


def _title(section: str, rng: random.Random) -> str:
    if section == "guide":
        return f"{rng.choice(_GERUNDS)} {rng.choice(_ADJS)} {rng.choice(_NOUNS)}s"
    if section == "reference":
        noun = rng.choice(_NOUNS).replace(" ", "_")
        return rng.choice((f"{noun}_{rng.choice(_VERBS)} setting", f"The {noun} file format",
                           f"CLI command: {rng.choice(_VERBS)}-{noun.replace('_', '-')}"))
    if section == "api":
        mod, cls = rng.choice(_MODULES), rng.choice(_CLASSES)
        return rng.choice((f"acme.{mod}.{cls}", f"acme.{mod}.{cls}.{rng.choice(_METHODS)}()",
                           f"acme.{mod} module"))
    if section == "tutorials":
        return rng.choice((f"How to {rng.choice(_VERBS)} a {rng.choice(_ADJS)} "
                           f"{rng.choice(_NOUNS)}",
                           f"Build a {rng.choice(_NOUNS)} {rng.choice(_NOUNS)} in "
                           f"{rng.randint(5, 30)} minutes"))
    return rng.choice((f"Release {rng.randint(1, 4)}.{rng.randint(0, 19)}: {rng.choice(_ADJS)} "
                       f"{rng.choice(_NOUNS)}s",
                       f"Notes from the {rng.choice(_CITIES)} meetup",
                       f"Why we made the {rng.choice(_NOUNS)} {rng.choice(_ADJS)}"))


# --------------------------------------------------------------------------------------------
# The page universe: every page that ever exists, and the state of each generation.
# --------------------------------------------------------------------------------------------
class _Universe:
    """Everything shared by all generations of one (pages, seed, size) site, plus caches."""

    def __init__(self, pages: int, seed: int, size_range: tuple[int, int],
                 specials: bool, epoch: datetime = _EPOCH) -> None:
        self.epoch = epoch
        if pages < 20:
            raise ValueError("the demo site needs at least 20 ordinary pages")
        self.n = pages
        self.seed = seed
        self.size_range = size_range
        self.specials = specials
        self.lock = threading.Lock()
        self.used_paths: set[str] = set()
        self.next_id = 0
        self.states: list[dict[str, Page]] = []
        self.removed_at: dict[str, int] = {}  # path -> generation from which it is gone
        self.render_cache: dict[tuple[int, int], tuple[bytes, bytes]] = {}
        self.states.append(self._initial())
        self.sidebar = [p for p in self.states[0].values() if p.pinned and p.kind == HTML]
        self.sidebar.sort(key=lambda p: (SECTIONS.index(p.section) if p.section in SECTIONS
                                         else -1, p.id))
        self._sidebar_html: dict[str | None, str] = {}

    def _new_page(self, **kw: Any) -> Page:
        path = kw["path"]
        assert path not in self.used_paths, path
        self.used_paths.add(path)
        page = Page(id=self.next_id, **kw)
        self.next_id += 1
        return page

    def _ordinary(self, section: str, created: datetime, pinned: bool = False,
                  path: str | None = None, title: str | None = None) -> Page:
        rng = random.Random(f"{self.seed}:title:{self.next_id}")
        title = title or _title_for(section, rng)
        if path is None:
            slug = _slugify(title)
            path, n = f"/{section}/{slug}.html", 2
            while path in self.used_paths:
                path, n = f"/{section}/{slug}-{n}.html", n + 1
        return self._new_page(path=path, title=title, section=section, kind=HTML, version=0,
                              lastmod=created, pinned=pinned)

    def _initial(self) -> dict[str, Page]:
        rng = random.Random(f"{self.seed}:initial")
        created = [self.epoch - timedelta(seconds=rng.randint(3600, 400 * 86400))
                   for _ in range(self.n + 64)]
        ci = iter(created)
        pages: list[Page] = [self._new_page(path=HOME, title=SITE_NAME, section="", kind=HTML,
                                            version=0, lastmod=next(ci), pinned=True)]
        for s in SECTIONS:
            pages.append(self._new_page(path=f"/{s}/index.html", title=_SECTION_TITLE[s],
                                        section=s, kind=HTML, version=0, lastmod=next(ci),
                                        pinned=True))
        counts = {s: int(self.n * w) for s, w in _SECTION_WEIGHTS.items()}
        counts["guide"] += self.n - sum(counts.values())
        named = {"guide": [(GETTING_STARTED, "Getting started"),
                           (INSTALLATION, "Installation")]}
        for s in SECTIONS:
            for i in range(counts[s]):
                fixed = named.get(s, [])
                path, title = fixed[i] if i < len(fixed) else (None, None)
                pages.append(self._ordinary(s, next(ci), pinned=i < _PINNED_PER_SECTION,
                                            path=path, title=title))
        if self.specials:
            pages += self._special_pages(ci)
        return {p.path: p for p in pages}

    def _special_pages(self, ci: Any) -> list[Page]:
        mk = self._new_page
        out = [
            mk(path=REDIRECT_FROM, title="Getting started (old)", section="guide", kind=HTML,
               version=0, lastmod=next(ci)),
            mk(path=MISSING, title="A retired post", section="blog", kind=HTML, version=0,
               lastmod=next(ci)),
            mk(path=PRIVATE, title="Internal roadmap", section="private", kind=HTML,
               version=0, lastmod=next(ci), flavour="private"),
            mk(path=CANONICAL_DUP, title="Installation (printable)", section="guide", kind=HTML,
               version=0, lastmod=next(ci), canonical=INSTALLATION),
            mk(path=NOINDEX, title="Internal notes for maintainers", section="reference",
               kind=HTML, version=0, lastmod=next(ci), noindex=True),
            mk(path=I18N, title="Internationalisation: Übersetzungen, café, 日本語",
               section="guide", kind=HTML, version=0, lastmod=next(ci), flavour="i18n"),
            mk(path=JAPANESE, title="クイックスタート（日本語）", section="guide", kind=HTML,
               version=0, lastmod=next(ci), lang="ja", flavour="ja"),
            mk(path=CAFE, title="Café und Müsli: notes from the Zürich meetup", section="blog",
               kind=HTML, version=0, lastmod=next(ci), flavour="cafe"),
            mk(path=CP1252, title="Legacy encoding notes", section="reference", kind=HTML,
               version=0, lastmod=next(ci), charset="windows-1252",
               flavour="cp1252"),
            mk(path=PDF_PATH, title="Acme manual (PDF)", section="reference", kind=PDF,
               version=0, lastmod=next(ci)),
            mk(path=MD_LLMS_ONLY, title="Cheat sheet", section="tutorials", kind=MARKDOWN,
               version=0, lastmod=next(ci), in_sitemap=False),
        ]
        md_titles = ("Quickstart", "API overview", "Your first crawl")
        for path, title in zip(MD_PAGES, md_titles, strict=True):
            out.append(mk(path=path, title=title, section=path.split("/")[1], kind=MARKDOWN,
                          version=0, lastmod=next(ci)))
        return out

    def state(self, generation: int) -> dict[str, Page]:
        if generation < 0:
            raise ValueError("generation must be >= 0")
        with self.lock:
            while len(self.states) <= generation:
                self.states.append(self._step(len(self.states) - 1))
            return self.states[generation]

    def _step(self, g: int) -> dict[str, Page]:
        """Generation g -> g+1: rewrite ~5 % of articles, remove 2 pages, add 3."""
        prev = self.states[g]
        rng = random.Random(f"{self.seed}:step:{g}")
        published = self.epoch + timedelta(days=g + 1)
        special = set(SPECIAL_PATHS.values())
        listed = [p for p in prev.values() if p.in_sitemap]
        changeable = sorted(p.path for p in prev.values()
                            if p.path not in special and p.section != ""
                            and not p.path.endswith("/index.html"))
        k = min(len(changeable), max(1, round(0.05 * len(listed))))
        changed = set(rng.sample(changeable, k))
        removable = sorted(p.path for p in prev.values() if not p.pinned and p.kind == HTML
                           and p.path not in special and p.path not in changed)
        removed = set(rng.sample(removable, min(2, len(removable))))
        nxt: dict[str, Page] = {}
        for path, p in prev.items():
            if path in removed:
                self.removed_at[path] = g + 1
                continue
            if path in changed:
                when = published + timedelta(seconds=rng.randint(0, 86399))
                p = dataclasses.replace(p, version=p.version + 1, lastmod=when)
            nxt[path] = p
        for _ in range(3):
            when = published + timedelta(seconds=rng.randint(0, 86399))
            section = rng.choice(SECTIONS)
            page = self._ordinary(section, when)
            nxt[page.path] = page
        return nxt

    # --- rendering ---------------------------------------------------------------------------
    def render(self, page: Page) -> tuple[bytes, bytes]:
        """(bytes before the clock, bytes after the clock), cached per (page id, version)."""
        key = (page.id, page.version)
        hit = self.render_cache.get(key)
        if hit is None:
            if page.kind == MARKDOWN:
                text = _render_markdown(self, page)
            elif page.kind == PDF:
                text = ""
            else:
                text = _render_html(self, page)
            enc = page.charset
            before, _, after = text.partition(_CLOCK_MARK)
            hit = (before.encode(enc, "xmlcharrefreplace"),
                   after.encode(enc, "xmlcharrefreplace"))
            if page.kind == PDF:
                hit = (_pdf_bytes(page), b"")
            self.render_cache[key] = hit
        return hit

    def sidebar_html(self, current: str | None) -> str:
        cached = self._sidebar_html.get(current)
        if cached is not None:
            return cached
        parts = ['<nav class="sidebar" aria-label="Documentation">']
        section = None
        for p in self.sidebar:
            if p.section != section:
                if section is not None:
                    parts.append("</ul>")
                section = p.section
                label = _SECTION_TITLE.get(section, "Start")
                parts.append(f'<p class="sidebar-heading">{label}</p><ul class="sidebar-list">')
            cur = ' aria-current="page" class="active"' if p.path == current else ""
            parts.append(f'<li><a href="{p.path}"{cur}>{html.escape(p.title)}</a></li>')
        parts.append("</ul></nav>")
        out = "\n".join(parts)
        if len(self._sidebar_html) < 4096:
            self._sidebar_html[current] = out
        return out


def _pdf_bytes(page: Page) -> bytes:
    """A tiny but well-formed one-page PDF: exercises skipping/saving binary responses."""
    text = f"{page.title} v{page.version}".encode("latin-1", "replace")
    stream = b"BT /F1 18 Tf 72 720 Td (" + text + b") Tj ET"
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream
            + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += (f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
            .encode())
    return bytes(out)


class _Text:
    """Deterministic documentation prose for one (page, version)."""

    def __init__(self, rng: random.Random, links: list[Page], flavour: str) -> None:
        self.rng = rng
        self.links = links
        self.flavour = flavour

    def ident(self) -> str:
        r = self.rng
        return r.choice((f"{r.choice(_NOUNS).replace(' ', '_')}_{r.choice(_VERBS)}",
                         f"{r.choice(_CLASSES)}.{r.choice(_METHODS)}()",
                         f"--{r.choice(_VERBS)}-{r.choice(_NOUNS).split()[0]}",
                         f"acme.{r.choice(_MODULES)}"))

    def sentence(self) -> str:
        r = self.rng
        if self.flavour in ("i18n", "cafe") and r.random() < 0.45:
            return html.escape(r.choice(_I18N_SENTENCES))
        if self.flavour == "ja":
            return html.escape(r.choice(_JA_SENTENCES))
        if self.flavour == "cp1252" and r.random() < 0.5:
            return html.escape(r.choice(_CP1252_SENTENCES))
        link = r.choice(self.links)
        text = r.choice(_SENTENCES).format(
            noun=r.choice(_NOUNS), noun2=r.choice(_NOUNS), noun3=r.choice(_NOUNS),
            verb=r.choice(_VERBS), adj=r.choice(_ADJS), ident=html.escape(self.ident()),
            link=link.path, link_title=html.escape(link.title))
        return _AN_RE.sub(r"\1n ", text)

    def paragraph(self, n: int | None = None) -> str:
        n = n or self.rng.randint(2, 6)
        return "<p>" + " ".join(self.sentence() for _ in range(n)) + "</p>"

    def heading(self) -> str:
        r = self.rng
        if self.flavour == "ja":
            return r.choice(("概要", "設定", "使い方", "よくある質問", "トラブルシューティング"))
        return r.choice((f"{r.choice(_GERUNDS)} the {r.choice(_NOUNS)}",
                         f"{r.choice(_ADJS).capitalize()} {r.choice(_NOUNS)}s",
                         f"How the {r.choice(_NOUNS)} works", "Examples", "Troubleshooting",
                         f"Options for {r.choice(_NOUNS)}s"))

    def code(self) -> str:
        r = self.rng
        cls, meth, mod = r.choice(_CLASSES), r.choice(_METHODS), r.choice(_MODULES)
        n = r.randint(2, 20)
        lines = [f"from acme.{mod} import {cls}",
                 "",
                 f"def {r.choice(_VERBS)}_{r.choice(_NOUNS).split()[0]}s(limit: int = {n}):",
                 f'    """{r.choice(_VERBS).capitalize()} up to <limit> items & report."""',
                 f"    client = {cls}(timeout={r.randint(1, 60)}, retries={r.randint(0, 5)})",
                 "    done = []",
                 f"    for item in client.{meth}(batch_size={r.choice((16, 32, 64, 128))}):",
                 "        if item.size > 0 and len(done) < limit:",
                 "            done.append(item)",
                 f'    print(f"{{len(done)}} items -> {r.choice(_NOUNS)}")',
                 "    return done"]
        body = html.escape("\n".join(lines))
        return f'<pre><code class="language-python">{body}</code></pre>'

    def shell(self) -> str:
        r = self.rng
        cmd = (f"$ acme {r.choice(_VERBS)} --{r.choice(_ADJS)} "
               f"--workers {r.randint(1, 16)} https://docs.example/")
        return f'<pre><code class="language-bash">{html.escape(cmd)}</code></pre>'

    def table(self) -> str:
        r = self.rng
        rows = []
        for _ in range(r.randint(3, 8)):
            name = r.choice(_NOUNS).replace(" ", "_") + "_" + r.choice(_VERBS)
            typ = r.choice(("int", "str", "bool", "float", "Duration", "list[str]"))
            default = r.choice(("0", "true", "false", "30s", '"auto"', "None", "100"))
            rows.append(f"<tr><td><code>{name}</code></td><td>{typ}</td><td>{html.escape(default)}"
                        f"</td><td>{self.sentence()}</td></tr>")
        return ("<table>\n<thead><tr><th>Name</th><th>Type</th><th>Default</th>"
                "<th>Description</th></tr></thead>\n<tbody>\n" + "\n".join(rows)
                + "\n</tbody>\n</table>")

    def ul(self) -> str:
        items = "".join(f"<li>{self.sentence()}</li>" for _ in range(self.rng.randint(3, 6)))
        return f"<ul>{items}</ul>"

    def ol(self) -> str:
        items = "".join(f"<li>{self.sentence()}</li>" for _ in range(self.rng.randint(3, 6)))
        return f"<ol>{items}</ol>"

    def image(self) -> str:
        r = self.rng
        name = f"{r.choice(_NOUNS).replace(' ', '-')}-{r.choice(('diagram', 'flow', 'screen'))}"
        alt = f"Diagram: how the {r.choice(_NOUNS)} talks to the {r.choice(_NOUNS)}"
        return (f'<figure><img src="/static/img/{name}.png" alt="{html.escape(alt)}" '
                f'width="640" height="360" loading="lazy"><figcaption>{html.escape(alt)}'
                "</figcaption></figure>")

    def quote(self) -> str:
        kind = self.rng.choice(("Note", "Tip", "Warning"))
        return f'<blockquote class="admonition"><p><strong>{kind}:</strong> {self.sentence()} ' \
               f"{self.sentence()}</p></blockquote>"


def _article(u: _Universe, page: Page, rng: random.Random, budget: int) -> str:
    """The <article>: one of each element, then random blocks until the size budget is met."""
    links = u.sidebar
    t = _Text(rng, links, page.flavour)
    parts = [f"<h1>{html.escape(page.title)}</h1>"]
    if page.section == "blog":
        when = page.lastmod.strftime("%d %B %Y")
        parts.append(f'<p class="byline">By {html.escape(rng.choice(_AUTHORS))} · {when}</p>')
    if page.flavour == "private":
        parts.append("<p>PRIVATE: robots.txt disallows /private/, so a polite crawler never "
                     "fetches this page.</p>")
    if page.canonical:
        parts.append(f'<p>This is the printable copy of <a href="{page.canonical}">'
                     "the installation guide</a>.</p>")
    parts.append(f'<p class="lead">{t.sentence()} {t.sentence()}</p>')
    h2 = t.heading()
    parts += [f'<h2 id="{_slugify(h2)}-1">{html.escape(h2)}</h2>', t.paragraph(), t.code(),
              t.paragraph(), t.table(), f"<h3>{html.escape(t.heading())}</h3>", t.paragraph(),
              t.ul(), t.ol(), t.image(), t.quote()]
    size = sum(len(p) for p in parts)
    blocks = (t.paragraph, t.paragraph, t.paragraph, t.code, t.shell, t.table, t.ul, t.ol,
              t.image, t.quote)
    n = 2
    while size < budget:
        if rng.random() < 0.3:
            h = t.heading()
            block = f'<h2 id="{_slugify(h)}-{n}">{html.escape(h)}</h2>'
            n += 1
        elif rng.random() < 0.15:
            block = f"<h3>{html.escape(t.heading())}</h3>"
        else:
            block = rng.choice(blocks)()
        if size + len(block) > budget + 200:
            break
        parts.append(block)
        size += len(block) + 1
    return "\n".join(parts)


def _render_html(u: _Universe, page: Page) -> str:
    rng = random.Random(f"{u.seed}:page:{page.id}:v{page.version}")
    lo, hi = u.size_range
    target = rng.randint(lo, hi)
    head = [
        "<!DOCTYPE html>",
        f'<html lang="{page.lang}">',
        "<head>",
        ('<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
         if page.charset == "windows-1252" else '<meta charset="utf-8">'),
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(page.title)} — {SITE_NAME}</title>",
        f'<meta name="description" content="{html.escape(page.title)} in the {SITE_NAME}.">',
    ]
    if page.canonical:
        head.append(f'<link rel="canonical" href="{page.canonical}">')
    if page.noindex:
        head.append('<meta name="robots" content="noindex, nofollow">')
    head += ['<link rel="stylesheet" href="/static/docs.css">',
             '<script src="/static/docs.js" defer></script>',
             "<style>.sidebar{width:16rem}.active{font-weight:bold}</style>",
             "</head>", "<body>"]
    top = ['<header class="site-header">',
           f'<a class="logo" href="/"><img src="/static/img/logo.png" alt=""> {SITE_NAME}</a>',
           '<nav class="top-nav" aria-label="Site"><ul>']
    top += [f'<li><a href="/{s}/index.html">{_SECTION_TITLE[s]}</a></li>' for s in SECTIONS]
    top += ['<li><a href="/llms.txt">llms.txt</a></li></ul></nav>',
            '<form class="search" action="/search" role="search">'
            '<input type="search" name="q" placeholder="Search the docs"></form>',
            "</header>",
            '<div class="cookie-banner" role="dialog">We use cookies to remember your theme. '
            '<button type="button">OK</button></div>',
            '<div class="layout">', u.sidebar_html(page.path), '<main id="content">']
    crumbs = ['<nav class="breadcrumbs" aria-label="Breadcrumb"><a href="/">Home</a>']
    if page.section in SECTIONS:
        crumbs.append(f' › <a href="/{page.section}/index.html">'
                      f"{_SECTION_TITLE[page.section]}</a>")
    crumbs.append("</nav>")
    updated = page.lastmod.strftime("%Y-%m-%d")
    chrome_after = [
        "</article>",
        '<aside class="toc"><p>On this page</p><ul><li><a href="#content">Top</a></li></ul>'
        "</aside>",
        '<nav class="pager"><a rel="prev" href="/">Previous</a> · '
        f'<a rel="next" href="/{page.section or "guide"}/index.html">Next</a></nav>',
        f'<p class="edit"><a href="https://git.example/acme/docs/edit/main{page.path}">'
        "Edit this page</a></p>",
        "</main>", "</div>",
        '<footer class="site-footer">',
        f'<p>© 2024 Acme Inc. · <a href="/privacy.html">Privacy</a> · Last updated {updated}</p>',
        f'<p class="build">Generated at {_CLOCK_MARK}</p>',
        "</footer>",
        '<script>window.dataLayer = window.dataLayer || []; dataLayer.push({"page": '
        f'"{page.path}"}});</script>',
        "</body>", "</html>", ""]
    chrome = "\n".join(head + top + crumbs + ["<article>"]) + "\n".join(chrome_after)
    budget = max(0, target - len(chrome.encode()) - 64)
    if page.section == "" or page.path.endswith("/index.html"):
        article = _index_article(u, page)
    else:
        article = _article(u, page, rng, budget)
    return ("\n".join([*head, *top, *crumbs, "<article>", article]) + "\n"
            + "\n".join(chrome_after))


def _index_article(u: _Universe, page: Page) -> str:
    """Landing pages: a short intro and links to the section's pinned pages."""
    if page.section == "":
        intro = ("<p>Welcome to the Acme documentation. Start with "
                 f'<a href="{GETTING_STARTED}">Getting started</a>, or browse a section.</p>')
        items = [(f"/{s}/index.html", _SECTION_TITLE[s]) for s in SECTIONS]
    else:
        intro = f"<p>{_SECTION_INTRO[page.section]}</p>"
        items = [(p.path, p.title) for p in u.sidebar
                 if p.section == page.section and not p.path.endswith("/index.html")]
    lis = "".join(f'<li><a href="{p}">{html.escape(t)}</a></li>' for p, t in items)
    return f"<h1>{html.escape(page.title)}</h1>\n{intro}\n<ul>{lis}</ul>"


def _render_markdown(u: _Universe, page: Page) -> str:
    rng = random.Random(f"{u.seed}:page:{page.id}:v{page.version}")
    t = _Text(rng, u.sidebar, "")

    def plain() -> str:
        s = re.sub(r'<a href="([^"]+)">([^<]+)</a>', r"[\2](\1)", t.sentence())
        return html.unescape(re.sub(r"</?code>", "`", s))

    lines = [f"# {page.title}", "", f"> {plain()}", ""]
    for _ in range(rng.randint(2, 4)):
        lines += [f"## {t.heading()}", "", " ".join(plain() for _ in range(3)), "",
                  "```python", f"from acme.{rng.choice(_MODULES)} import {rng.choice(_CLASSES)}",
                  f"print({rng.choice(_CLASSES)}().{rng.choice(_METHODS)}())", "```", ""]
        lines += [f"- {plain()}" for _ in range(3)] + [""]
    lines += ["| Option | Default |", "| --- | --- |"]
    lines += [f"| `{rng.choice(_NOUNS).replace(' ', '_')}` | `{rng.randint(0, 99)}` |"
              for _ in range(4)]
    lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Public site object
# --------------------------------------------------------------------------------------------
class DemoSite:
    """The site at one generation.  Cheap to create; rendering is cached and shared."""

    def __init__(self, universe: _Universe, generation: int) -> None:
        self._u = universe
        self.generation = generation
        self._pages = universe.state(generation)
        self.special: dict[str, str] = dict(SPECIAL_PATHS) if universe.specials else {}

    @property
    def seed(self) -> int:
        return self._u.seed

    @property
    def pages(self) -> list[Page]:
        """Every page that exists at this generation (incl. specials), sorted by path."""
        return [self._pages[k] for k in sorted(self._pages)]

    def page(self, path: str) -> Page | None:
        return self._pages.get(path)

    def at(self, generation: int) -> DemoSite:
        """The same site at another generation (shares caches)."""
        return DemoSite(self._u, generation)

    def sitemap_paths(self) -> list[str]:
        """URL paths listed in the sitemaps (docs and blog), incl. the designed oddities."""
        return sorted(p.path for p in self._pages.values() if p.in_sitemap)

    def content_paths(self) -> list[str]:
        """Listed paths a polite crawler should fetch and convert successfully (200, allowed)."""
        skip = {MISSING, PRIVATE, REDIRECT_FROM}
        return [p for p in self.sitemap_paths() if p not in skip]

    def changed_since(self, generation: int) -> set[str]:
        """Paths present at both generations whose article changed in between."""
        old = self._u.state(generation)
        return {p for p, page in self._pages.items()
                if p in old and old[p].version != page.version}

    def removed_since(self, generation: int) -> set[str]:
        old = self._u.state(generation)
        return set(old) - set(self._pages)

    def added_since(self, generation: int) -> set[str]:
        old = self._u.state(generation)
        return set(self._pages) - set(old)

    def is_gone(self, path: str) -> bool:
        """True if the path existed in an earlier generation and was removed (answers 410)."""
        g = self._u.removed_at.get(path)
        return g is not None and g <= self.generation

    def render_page(self, page: Page, clock: str | None = None) -> bytes:
        """Bytes of a page; ``clock=None`` writes a fixed footer (static sites, benchmarks)."""
        before, after = self._u.render(page)
        if page.kind != HTML:
            return before
        return before + (clock or "build time").encode("ascii") + after

    def etag(self, page: Page) -> str:
        before, after = self._u.render(page)
        return _etag(before, after)

    def render(self, path: str, clock: str | None = None) -> bytes:
        page = self._pages[path]
        return self.render_page(page, clock)

    # --- discovery files ---------------------------------------------------------------------
    def robots_txt(self, base_url: str) -> str:
        return ("# robots.txt for the Acme Docs demo site\n"
                "User-agent: *\n"
                "Disallow: /private/\n"
                "Disallow: /search\n"
                "Allow: /\n"
                "\n"
                "User-agent: BadBot\n"
                "Disallow: /\n"
                "\n"
                f"Sitemap: {base_url}/sitemap.xml\n")

    def _urlset(self, base_url: str, pages: list[Page]) -> bytes:
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
        for p in pages:
            out.append(f"<url><loc>{html.escape(base_url + p.path)}</loc>"
                       f"<lastmod>{_w3c(p.lastmod)}</lastmod>"
                       f"<changefreq>{_CHANGEFREQ[p.section]}</changefreq>"
                       f"<priority>{_PRIORITY[p.section]}</priority></url>")
        out.append("</urlset>\n")
        return "\n".join(out).encode()

    def _split(self) -> tuple[list[Page], list[Page]]:
        listed = [p for p in self.pages if p.in_sitemap]
        return ([p for p in listed if p.section != "blog"],
                [p for p in listed if p.section == "blog"])

    def sitemap_docs(self, base_url: str) -> bytes:
        return self._urlset(base_url, self._split()[0])

    def sitemap_blog(self, base_url: str) -> bytes:
        return self._urlset(base_url, self._split()[1])

    def sitemap_index(self, base_url: str) -> bytes:
        docs, blog = self._split()
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
        for name, pages in (("sitemap-docs.xml", docs), ("sitemap-blog.xml.gz", blog)):
            last = max(p.lastmod for p in pages)
            out.append(f"<sitemap><loc>{base_url}/{name}</loc>"
                       f"<lastmod>{_w3c(last)}</lastmod></sitemap>")
        out.append("</sitemapindex>\n")
        return "\n".join(out).encode()

    def llms_txt(self, base_url: str) -> str:
        """llmstxt.org format: H1, blockquote, prose, H2 link lists, an ``## Optional`` list."""
        pinned = {s: [p for p in self._u.sidebar if p.section == s
                      and not p.path.endswith("/index.html")][:4] for s in SECTIONS}
        lines = [f"# {SITE_NAME}", "",
                 "> Acme is a toolkit for crawling documentation sites politely and turning "
                 "them into clean markdown.", "",
                 "Pages ending in .md are plain markdown and the best start for a language "
                 "model; the HTML pages carry the same content with navigation around it.", "",
                 "## Docs", ""]
        if self._u.specials:
            lines.append(f"- [Quickstart]({MD_PAGES[0]}): install and crawl your first site")
        lines += [f"- [{p.title}]({p.path}): {_SECTION_TITLE[p.section].lower()} page"
                  for p in pinned["guide"]]
        lines += ["", "## API", ""]
        if self._u.specials:
            lines.append(f"- [API overview]({base_url}{MD_PAGES[1]}): modules and entry points")
        lines += [f"- [{p.title}]({base_url}{p.path}): reference for {p.title}"
                  for p in pinned["api"]]
        lines += ["", "## Tutorials", ""]
        if self._u.specials:
            lines += [f"- [Your first crawl]({MD_PAGES[2]}): a complete walk-through",
                      f"- [Cheat sheet]({MD_LLMS_ONLY}): every command on one page"]
        lines += [f"- [{p.title}]({p.path})" for p in pinned["tutorials"][:2]]
        lines += ["", "## Optional", ""]
        lines += [f"- [{p.title}]({base_url}{p.path}): older news, safe to skip"
                  for p in pinned["blog"]]
        return "\n".join(lines) + "\n"

    # --- HTTP resources ----------------------------------------------------------------------
    def _app_resource(self, path: str, base_url: str) -> Resource:
        """The JavaScript-rendered section: its sitemap, its script, its shells."""
        epoch = self._u.epoch
        if path == APP_SITEMAP:
            body = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps'
                    '.org/schemas/sitemap/0.9">\n' + "".join(
                        f"<url><loc>{base_url}{p}</loc><lastmod>{_w3c(epoch)}</lastmod></url>\n"
                        for p in APP_PAGES) + "</urlset>\n").encode()
            return Resource(200, "application/xml", body, _etag(body), epoch)
        if path == APP_SCRIPT:
            return Resource(200, "text/javascript", _APP_JS, _etag(_APP_JS), epoch)
        body = _app_shell(path)
        return Resource(200, "text/html; charset=utf-8", body, _etag(body), epoch)

    def resource(self, path: str, base_url: str, clock: str | None = None) -> Resource:
        """What the server answers for ``path`` (query and fragment already stripped)."""
        if path == "/robots.txt":
            body = self.robots_txt(base_url).encode()
            return Resource(200, "text/plain; charset=utf-8", body, _etag(body), self._u.epoch)
        if path in ("/sitemap.xml", "/sitemap-docs.xml", "/sitemap-blog.xml.gz"):
            docs, blog = self._split()
            if path == "/sitemap.xml":
                body, ctype, pages = self.sitemap_index(base_url), "application/xml", docs + blog
            elif path == "/sitemap-docs.xml":
                body, ctype, pages = self.sitemap_docs(base_url), "application/xml", docs
            else:
                # Real gzip (not Content-Encoding): exercises .xml.gz sitemap children.
                body = gzip.compress(self.sitemap_blog(base_url), mtime=0)
                ctype, pages = "application/gzip", blog
            return Resource(200, ctype, body, _etag(body), max(p.lastmod for p in pages))
        if path in (APP_SITEMAP, APP_SCRIPT) or path in APP_PAGES:
            return self._app_resource(path, base_url)
        if path == "/llms.txt":
            body = self.llms_txt(base_url).encode()
            return Resource(200, "text/plain; charset=utf-8", body, _etag(body), self._u.epoch)
        if path.startswith("/static/"):
            ctype = {"png": "image/png", "css": "text/css", "js": "text/javascript"}.get(
                path.rsplit(".", 1)[-1])
            if ctype:
                body = _PNG if ctype == "image/png" else b"/* demo */\n"
                return Resource(200, ctype, body, _etag(body), self._u.epoch)
        page = self._pages.get(path)
        if page is None:
            if self.is_gone(path):
                return Resource(410, "text/plain; charset=utf-8", b"410 Gone\n")
            return Resource(404, "text/plain; charset=utf-8", b"404 Not Found\n")
        if path == MISSING and self._u.specials:
            return Resource(404, "text/html; charset=utf-8",
                            b"<!DOCTYPE html><title>Not found</title><h1>Not found</h1>\n")
        if path == REDIRECT_FROM and self._u.specials:
            return Resource(301, "text/html; charset=utf-8", b"Moved\n",
                            headers={"Location": base_url + GETTING_STARTED})
        if page.kind == MARKDOWN:
            ctype = "text/markdown; charset=utf-8"
        elif page.kind == PDF:
            ctype = "application/pdf"
        elif page.charset == "windows-1252":
            ctype = "text/html"  # charset only in the <meta> tag
        else:
            ctype = "text/html; charset=utf-8"
        return Resource(200, ctype, self.render_page(page, clock), self.etag(page), page.lastmod)


def generate(generation: int = 0, pages: int = 300, seed: int = 7, *,
             size_range: tuple[int, int] = (5_000, 25_000), specials: bool = True,
             epoch: datetime | None = None) -> DemoSite:
    """The demo site at ``generation``: ``pages`` ordinary pages plus home, 5 section indexes
    and (with ``specials``) 14 designed oddities.  Same arguments, same bytes.

    Generation g is published at ``epoch + g + 1 days`` (default epoch: 2024-01-01); the
    ``demo`` command passes an epoch that makes the current generation published *now*, so
    sitemap lastmod planning sees the pages it changed as newer than the previous crawl."""
    return DemoSite(_Universe(pages, seed, size_range, specials,
                              _EPOCH if epoch is None else epoch), generation)


# --------------------------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------------------------
class DemoServer:
    """A ThreadingHTTPServer on a daemon thread serving one DemoSite; use as a context manager."""

    def __init__(self, site: DemoSite, host: str = "127.0.0.1", port: int = 0) -> None:
        self.site = site
        self.request_log: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._bytes = 0
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive
            disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms
            server_version = "AcmeDocs/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                srv._handle(self, head=False)

            def do_HEAD(self) -> None:
                srv._handle(self, head=True)

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self.host = host
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name="demosite", daemon=True)
        self._thread.start()
        self._stopped = False

    def __enter__(self) -> DemoServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._httpd.shutdown()
            self._httpd.server_close()

    def set_generation(self, generation: int) -> None:
        """Switch the content live; requests after this call see the new generation."""
        site = self.site.at(generation)
        with self._lock:
            self.site = site

    def stats(self) -> ServerStats:
        with self._lock:
            by = Counter(r.status for r in self.request_log)
            return ServerStats(len(self.request_log), by.get(200, 0), by.get(304, 0),
                               self._bytes, dict(by))

    def reset_log(self) -> None:
        with self._lock:
            self.request_log.clear()
            self._bytes = 0

    def _handle(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        with self._lock:
            self._counter += 1
            n = self._counter
            site = self.site
        raw = h.path
        path = urlsplit(raw).path or "/"
        clock = f"{datetime.now(UTC).isoformat(timespec='microseconds')} (request {n})"
        res = site.resource(path, self.base_url, clock)
        if res.status == 404 and path != quote(unquote(path)):
            res = site.resource(quote(unquote(path)), self.base_url, clock)
        req_headers = {k.lower(): v for k, v in h.headers.items()}
        status, body = res.status, res.body
        headers = {"Content-Type": res.content_type, **(res.headers or {})}
        if res.etag:
            headers["ETag"] = res.etag
        if res.last_modified is not None:
            headers["Last-Modified"] = _httpdate(res.last_modified)
        if status == 200 and _not_modified(req_headers, res):
            status, body = 304, b""
        sends_body = not head and status != 304
        with self._lock:  # log before answering, so a client never sees an unlogged response
            self._bytes += len(body) if sends_body else 0
            self.request_log.append(LoggedRequest(h.command, raw, status, req_headers))
        h.send_response(status)
        for k, v in headers.items():
            if status == 304 and k == "Content-Type":
                continue
            h.send_header(k, v)
        if status != 304:  # RFC 9110: a 304 must not carry a Content-Length of 0
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if sends_body:
            try:
                h.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                h.close_connection = True


def _not_modified(req: dict[str, str], res: Resource) -> bool:
    """RFC 9110 section 13.2.2: If-None-Match wins; If-Modified-Since only without it."""
    inm = req.get("if-none-match")
    if inm is not None:
        if res.etag is None:
            return False
        tags = [t.strip() for t in inm.split(",")]
        return "*" in tags or res.etag in tags or f"W/{res.etag}" in tags
    ims = req.get("if-modified-since")
    if ims and res.last_modified is not None:
        try:
            since = email.utils.parsedate_to_datetime(ims)
        except (TypeError, ValueError):
            return False
        if since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
        return res.last_modified.replace(microsecond=0) <= since
    return False


def serve(site: DemoSite, host: str = "127.0.0.1", port: int = 0) -> DemoServer:
    """Start serving ``site`` now (port 0 picks a free port); stop with ``.stop()`` or ``with``."""
    return DemoServer(site, host, port)
