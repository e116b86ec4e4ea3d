"""HTML page → clean markdown of its main content, plus the metadata the crawler needs.

lxml parses the page once; metadata (title, canonical, robots, base) is read from that tree,
``content.choose`` picks the main-content element and the widgets inside it, and
``render.Renderer`` walks that subtree straight to markdown (no second tree, no markdownify),
resolving link and image URLs and gathering the page's links in the same pass.

``content_hash`` is taken over the whitespace-collapsed markdown of the main content only, so
a clock in the footer or a changed nav is not a change, while an edit in the article is.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urljoin

from lxml import etree

from sitemap_crawler.convert.content import choose
from sitemap_crawler.convert.render import Renderer
from sitemap_crawler.convert.signals import hidden_style, text_len
from sitemap_crawler.frontmatter import front_matter, timestamp

__all__ = [
    "Page",
    "front_matter",
    "html_to_markdown",
    "normalized_hash",
    "parse_html",
    "parse_robots_directives",
    "render_document",
    "text_document",
    "text_title",
]


@dataclass
class Page:
    """What one HTML page yields: its markdown and what the crawler decides with."""

    title: str
    markdown: str
    text_chars: int  # visible characters of the main content, whitespace runs counted once
    content_hash: str  # "sha256:<hex>" of the whitespace-collapsed markdown
    canonical: str | None
    noindex: bool
    nofollow: bool
    lang: str | None
    description: str | None
    links: list[str] = field(default_factory=list)  # absolute http(s), no fragment, deduped
    root: str = ""  # which element was the content: main>article, main, density, body, ...


# --- hashing ---------------------------------------------------------------------------------


def normalized_hash(text: str) -> str:
    """Hash of ``text`` with every whitespace run collapsed: reflowing is not a change."""
    return "sha256:" + hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


# --- robots directives -----------------------------------------------------------------------

# Directives that carry a value after a colon, so "name: value" is not a user-agent prefix.
_VALUED_DIRECTIVES = {"unavailable_after", "max-snippet", "max-image-preview",
                      "max-video-preview"}
_UA_PREFIX_RE = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*:\s*(.*)$", re.S)


def parse_robots_directives(
    value: str | None, user_agent: str = "sitemap-crawler"
) -> tuple[bool, bool]:
    """``(noindex, nofollow)`` from a ``<meta name=robots>`` content or an X-Robots-Tag value.

    Several header values may be joined with commas.  Directives after a user-agent prefix
    (``googlebot: noindex``) count only if that agent is ``user_agent`` (case-insensitive);
    ``none`` means both.
    """
    if not value:
        return False, False
    noindex = nofollow = False
    applies = True
    agent = user_agent.lower()
    for token in value.split(","):
        m = _UA_PREFIX_RE.match(token)
        if m and m.group(1).lower() not in _VALUED_DIRECTIVES:
            applies = m.group(1).lower() in (agent, "*")
            token = m.group(2)
        if not applies:
            continue
        d = token.strip().lower()
        if d in ("noindex", "none"):
            noindex = True
        if d in ("nofollow", "none"):
            nofollow = True
    return noindex, nofollow


# --- parsing and metadata --------------------------------------------------------------------

_XML_DECL_RE = re.compile(r"^\s*<\?xml[^>]*>")
_WS_RE = re.compile(r"\s+")
_local = threading.local()


def _parser() -> etree.HTMLParser:
    """One parser per thread: lxml parser objects must not be shared between threads.

    A plain ``etree.HTMLParser``, not ``lxml.html``'s: the latter picks a Python element
    class for every element through a Python callback, which cost ~10 % of the conversion.
    """
    p = getattr(_local, "parser", None)
    if p is None:
        # huge_tree: without it libxml2 stops at 255 levels of nesting and at a 10 MB text
        # node, and the text past either is lost without an error
        p = _local.parser = etree.HTMLParser(remove_comments=True, remove_pis=True,
                                             huge_tree=True)
    return p


def parse_html(html: str) -> Any | None:
    """The lxml tree of a page (None for an empty or unreadable one), for callers that look at
    the page before converting it (the worker's JavaScript-shell check): they pass it back to
    :func:`html_to_markdown` so the page is parsed once."""
    return _parse(html)


def _parse(html: str) -> Any | None:
    if html.lstrip()[:5].lower() == "<?xml":  # lxml refuses str input that declares a charset
        html = _XML_DECL_RE.sub("", html, count=1)
    html = _reopened(html)
    parser = _parser()
    try:
        doc = etree.fromstring(html, parser)  # None for an empty document
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None
    if doc is not None and _cut(parser):
        # nested deeper than libxml2 goes (2048 levels even with huge_tree): the text
        # below would be lost, so parse again without the wrapper tags, then as text only
        for flat in (_FLATTEN_RE.sub(" ", html), _ANY_TAG_RE.sub(" ", html)):
            doc = etree.fromstring(flat, parser)
            if doc is None or not _cut(parser):
                break
    return doc


_END_TAG_RE = re.compile(r"</(?:body|html)\s*>", re.I)
_START_TAG_RE = re.compile(r"<[A-Za-z]")


def _reopened(html: str) -> str:
    """``html`` without its ``</body>``/``</html>`` tags when markup follows them (a theme that
    prints the closing tags before the post): a browser parses the rest into the body
    (HTML5's "after body" modes), libxml2 drops what follows ``</html>`` and leaves what
    follows ``</body>`` outside the body, so the page's text was lost."""
    end = _END_TAG_RE.search(html)  # (one scan: 4x faster than a find per spelling)
    if end is None or not _START_TAG_RE.search(html, end.end()):
        return html
    return _END_TAG_RE.sub("", html)


def _cut(parser: Any) -> bool:
    """Did libxml2 stop early (too deep) and drop the rest of the page?"""
    return any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log)


# every tag but those that carry the structure markdown shows
_FLATTEN_RE = re.compile(r"</?(?!(?:p|h[1-6]|pre|code|ul|ol|li|dl|dt|dd|table|thead|tbody|tr|"
                         r"td|th|a|br|img|main|article|body|html|head|title|meta|link|script|"
                         r"style|blockquote)[\s/>])[A-Za-z][^>]*>")
_ANY_TAG_RE = re.compile(r"<(?!/?(?:html|head|title|body)[\s/>])/?[A-Za-z][^>]*>")


def _text_content(el: Any) -> str:
    return "".join(el.itertext())


def _collapse(text: str | None) -> str:
    return " ".join(text.split()) if text else ""


@dataclass
class _Head:
    title: str = ""
    og_title: str = ""
    og_type: str = ""
    og_description: str = ""
    base: str = ""
    canonical: str | None = None
    description: str | None = None
    robots: list[str] = field(default_factory=list)


def _read_head(doc: Any, url: str) -> _Head:
    """Title, base URL, canonical, description and robots metas, in one pass over the tree."""
    head = _Head(base=url)
    canonical_href = None
    for el in doc.iter("title", "meta", "link", "base"):
        tag = el.tag
        if tag == "title":
            if not head.title and el.getparent().tag == "head":  # not an <svg><title>
                head.title = _collapse(_text_content(el))
        elif tag == "meta":
            name = (el.get("name") or el.get("property") or "").strip().lower()
            content = el.get("content")
            if content is None:
                continue
            if name == "robots":
                head.robots.append(content)
            elif name == "description" and head.description is None:
                head.description = _collapse(content) or None
            elif name == "og:description" and not head.og_description:
                head.og_description = _collapse(content)
            elif name == "og:title" and not head.og_title:
                head.og_title = _collapse(content)
            elif name == "og:type" and not head.og_type:
                head.og_type = content.strip().lower()
        elif tag == "link":
            rel = (el.get("rel") or "").lower().split()
            if "canonical" in rel and canonical_href is None and el.get("href"):
                canonical_href = el.get("href").strip()
        elif tag == "base" and head.base == url and el.get("href"):
            head.base = urljoin(url, el.get("href").strip())
    if head.description is None:
        head.description = head.og_description or None
    if canonical_href:
        head.canonical = urljoin(head.base, canonical_href)
    return head


# --- tidy ------------------------------------------------------------------------------------

_CONTROLS = tuple(chr(c) for c in (*range(0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f))
_CONTROL_RE = re.compile("[" + re.escape("".join(_CONTROLS)) + "]")
# (``any(c in md ...)`` first: ~10x faster than the regex's scan, and most pages have none)
_FENCE_RE = re.compile(r"^ *(`{3,}|~{3,})")


def _tidy(md: str) -> str:
    """Strip trailing whitespace, keep at most one blank line (outside code blocks)."""
    if any(c in md for c in _CONTROLS):
        md = _CONTROL_RE.sub("", md)
    out: list[str] = []
    append = out.append
    fence = ""
    blank = False
    for line in md.split("\n"):
        line = line.rstrip()
        if fence:
            append(line)
            if line.strip() == fence:
                fence = ""
            continue
        if not line:
            if blank or not out:
                continue
            blank = True
        else:
            if "```" in line or "~~~" in line:  # (the regex only where it can match)
                m = _FENCE_RE.match(line)
                if m:
                    fence = m.group(1)
            blank = False
        append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""


# --- the entry point -------------------------------------------------------------------------


_UNPARSED: Any = object()
_REVEAL_BELOW = 100  # the worker's default min_content_chars: below it a page is not written


def _gated(root: Any) -> Any:
    """The block a script would show: hidden by its inline style and holding most of the
    root's text, on a page whose visible rest says almost nothing (a shop's age or password
    gate, an anti-flicker wrapper).  Without it such a page comes out empty."""
    total = text_len(root)
    for el in root.iter():
        if isinstance(el.tag, str) and hidden_style(el):
            size = text_len(el)
            if size >= 500 and size >= 0.5 * total:
                return el
    return None


def html_to_markdown(html: str, url: str, *, code_language_default: str | None = None,
                     doc: Any = _UNPARSED) -> Page:
    """Convert the main content of ``html`` (fetched from ``url``) to markdown; ``doc`` is
    :func:`parse_html` of ``html`` when the caller has it already (it is not modified)."""
    if doc is _UNPARSED:
        doc = _parse(html)
    if doc is None:
        return Page(title="", markdown="", text_chars=0, content_hash=normalized_hash(""),
                    canonical=None, noindex=False, nofollow=False, lang=None,
                    description=None, links=[])
    head = _read_head(doc, url)
    noindex = nofollow = False
    for value in head.robots:
        ni, nf = parse_robots_directives(value)
        noindex, nofollow = noindex or ni, nofollow or nf
    choice = choose(doc, news=head.og_type == "article")
    renderer = Renderer(head.base, whole_body=choice.whole_body,
                        code_default=code_language_default or "", drop_elements=choice.widgets)
    markdown = _tidy(renderer.markdown(choice.root, choice.before))
    if renderer.text_chars < _REVEAL_BELOW:
        gated = _gated(choice.root)
        if gated is not None:
            renderer = Renderer(head.base, whole_body=choice.whole_body,
                                code_default=code_language_default or "",
                                drop_elements=choice.widgets, shown=gated)
            markdown = _tidy(renderer.markdown(choice.root, choice.before))
    title = head.title or head.og_title
    if not title:
        h1 = next(doc.iter("h1"), None)
        title = _collapse(_text_content(h1)) if h1 is not None else ""
    lang = (doc.get("lang") or doc.get("{http://www.w3.org/XML/1998/namespace}lang") or "")
    return Page(
        title=title,
        markdown=markdown,
        text_chars=renderer.text_chars,
        content_hash=normalized_hash(markdown),
        canonical=head.canonical,
        noindex=noindex,
        nofollow=nofollow,
        lang=lang.strip() or None,
        description=head.description,
        links=renderer.links,
        root=choice.kind,
    )


# --- documents on disk -----------------------------------------------------------------------

def _fields(*, url: str, final_url: str | None, title: str, status: int,
            fetched_at: datetime | str, extra: dict[str, Any] | None,
            description: str | None = None, lang: str | None = None,
            content_hash: str | None = None, canonical: str | None = None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "url": url,
        "final_url": final_url if final_url and final_url != url else None,
        "title": title,
        "description": description,
        "lang": lang,
        "status": status,
        "fetched_at": timestamp(fetched_at),
        "content_hash": content_hash,
        "canonical": canonical if canonical not in (url, final_url) else None,
    }
    for key, value in (extra or {}).items():
        if key in fields:
            raise ValueError(f"extra front-matter key {key!r} would replace a built-in one")
        fields[key] = value
    return fields


def render_document(
    page: Page,
    *,
    url: str,
    final_url: str | None,
    status: int,
    fetched_at: datetime | str,
    extra: dict[str, Any] | None = None,
    front_matter_enabled: bool = True,
) -> str:
    """The markdown file for an HTML page: front matter (unless disabled), then the markdown.

    ``final_url`` is recorded only when it differs from ``url`` (a redirect); ``extra`` keys
    (etag, site, ...) follow the built-in ones and may not replace them.
    """
    if not front_matter_enabled:
        return page.markdown
    fields = _fields(url=url, final_url=final_url, title=page.title, status=status,
                     fetched_at=fetched_at, extra=extra, description=page.description,
                     lang=page.lang, content_hash=page.content_hash,
                     canonical=page.canonical)
    return front_matter(fields) + "\n" + page.markdown


_MD_HEADING_RE = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def text_title(body_text: str) -> str:
    """A title for a text/markdown body: its first ATX heading, else its first line."""
    m = _MD_HEADING_RE.search(body_text[:4096])
    if m:
        return _collapse(m.group(1))
    for line in body_text[:4096].splitlines():
        if line.strip():
            return _collapse(line)[:200]
    return ""


def text_document(
    body_text: str,
    *,
    url: str,
    final_url: str | None,
    status: int,
    fetched_at: datetime | str,
    extra: dict[str, Any] | None = None,
    title: str | None = None,
    front_matter_enabled: bool = True,
) -> str:
    """The file for a ``text/markdown``/``text/plain`` response: front matter + body as is."""
    if not front_matter_enabled:
        return body_text
    fields = _fields(url=url, final_url=final_url,
                     title=text_title(body_text) if title is None else title,
                     status=status, fetched_at=fetched_at, extra=extra,
                     content_hash=normalized_hash(body_text))
    return front_matter(fields) + "\n" + body_text
