"""HTML page → clean markdown of its main content, plus the metadata the crawler needs.

Speed decides the shape of this module (the worker has ~10 ms CPU per page for everything,
see ``bench/bench_convert.py``):

* lxml parses the page once (~0.3 ms for 20 KB).  Metadata (title, canonical, robots, base)
  and the main-content element are read from that tree.
* The main-content subtree is copied straight into a BeautifulSoup tree for markdownify
  (:func:`_build`), without serialising and re-parsing it.  The copy skips boilerplate and
  hidden elements, resolves link and image URLs and gathers the page's links in the same
  pass, so nothing walks the tree twice.
* :class:`_Converter` is markdownify's converter with its hot spots replaced: the stock
  ``process_tag`` looks for a ``<pre>`` ancestor on every element, ``<tr>``/``<li>`` use bs4
  searches and the block checks are function calls.  The replaced ``process_tag`` and
  ``process_text`` give markdownify's exact output (a test compares them); converting
  takes ~1.0 ms per page instead of ~5.4 ms with the stock converter.  Whole page:
  ~3.1 ms vs ~18 ms for ``markdownify.markdownify(html)``
  (``python bench/bench_convert.py --phases``).

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
from urllib.parse import urljoin, urlsplit, urlunsplit

from bs4.element import NavigableString, Tag
from lxml import etree
from markdownify import (
    ATX,
    BACKSLASH,
    MarkdownConverter,
    re_extract_newlines,
    re_newline_whitespace,
    re_whitespace,
    strip_pre,
)

from sitemap_crawler.frontmatter import front_matter, timestamp

__all__ = [
    "Page",
    "front_matter",
    "html_to_markdown",
    "normalized_hash",
    "parse_robots_directives",
    "raw_hash",
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


# --- hashing ---------------------------------------------------------------------------------


def raw_hash(body: bytes) -> str:
    """Hash of the response bytes exactly as served (for non-HTML bodies and quick checks)."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


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
        p = _local.parser = etree.HTMLParser(remove_comments=True, remove_pis=True)
    return p


def _parse(html: str) -> Any | None:
    if html.lstrip()[:5].lower() == "<?xml":  # lxml refuses str input that declares a charset
        html = _XML_DECL_RE.sub("", html, count=1)
    try:
        return etree.fromstring(html, _parser())  # None for an empty document
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None


def _text_content(el: Any) -> str:
    return "".join(el.itertext())


def _collapse(text: str | None) -> str:
    return " ".join(text.split()) if text else ""


@dataclass
class _Head:
    title: str = ""
    og_title: str = ""
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


# Elements that are never content, even inside <main>: nav (breadcrumbs, prev/next, TOC) and
# footer ("last updated", "edit this page") are there too, so that they do not move the
# content hash.  BOILERPLATE (+ header, aside) applies when the content is the whole <body>.
_NEVER = frozenset({
    "script", "style", "noscript", "form", "button", "svg", "iframe", "template", "input",
    "select", "textarea", "canvas", "dialog", "object", "embed", "link", "meta", "head",
    "title", "base", "nav", "footer", "math-field",
})
_BOILERPLATE = _NEVER | {"header", "aside"}
_NAV_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
_BODY_NAV_ROLES = _NAV_ROLES | {"complementary"}
_PERMALINK_CLASSES = frozenset({"headerlink", "hash-link", "anchor-link", "anchorjs-link",
                                "header-anchor", "heading-anchor", "permalink"})
_PERMALINK_TEXTS = frozenset({"", "¶", "§", "#", "🔗", "⚓"})
_LANG_CLASS_RE = re.compile(
    r"(?:^|\s)(?:(?:language|lang|highlight(?:-source)?)-|brush:\s*)([A-Za-z0-9_+#.-]+)")
_NO_LANG = frozenset({"none", "plaintext", "nohighlight", "text-only", "notranslate",
                      "default", "source"})


def _hidden(el: Any) -> bool:
    attrib = el.attrib
    if not attrib:
        return False
    if "hidden" in attrib or attrib.get("aria-hidden", "").strip().lower() == "true":
        return True
    style = attrib.get("style")
    return bool(style) and "display:none" in style.replace(" ", "").lower()


def _main_content(doc: Any) -> tuple[Any, bool]:
    """``(element, is_whole_body)``: <main>, else a single <article>, else [role=main], else body.

    Several <article>s (a listing page) fall through to the body so none of them is lost.
    """
    for el in doc.iter("main"):
        if not _hidden(el):
            return el, False
    articles = [a for a in doc.iter("article") if not _hidden(a)]
    if len(articles) == 1:
        return articles[0], False
    for el in doc.iterfind(".//*[@role='main']"):
        if not _hidden(el):
            return el, False
    body = doc.find("body")
    return (body if body is not None else doc), True


def _code_language(pre: Any) -> str:
    """Language of a code block from the classes/data-lang used by common highlighters."""
    candidates = [pre]
    code = pre.find("code")
    if code is not None:
        candidates.insert(0, code)
    parent = pre.getparent()
    for _ in range(2):  # Sphinx: div.highlight-python > div.highlight > pre
        if parent is None or parent.tag != "div":
            break
        candidates.append(parent)
        parent = parent.getparent()
    for el in candidates:
        lang = el.get("data-lang") or el.get("data-language")
        if lang and lang.strip().lower() not in _NO_LANG:
            return lang.strip()
        cls = el.get("class")
        if cls:
            for m in _LANG_CLASS_RE.finditer(cls):
                if m.group(1).lower() not in _NO_LANG:
                    return m.group(1)
            tokens = cls.split()
            if "sourceCode" in tokens and len(tokens) == 2:  # pandoc: "sourceCode python"
                lang = tokens[1 - tokens.index("sourceCode")]
                if lang.lower() not in _NO_LANG:
                    return lang
    return ""


# --- lxml subtree -> bs4 tree ----------------------------------------------------------------

_BAD_SCHEMES = ("javascript:", "vbscript:", "data:")
_URL_JUNK_RE = re.compile(r"[\t\n\r]")
_MD_URL_SPECIAL_RE = re.compile(r"[\s()<>]")


def _md_url(url: str) -> str:
    """A URL usable as a markdown link destination (``<...>`` form when it has spaces/parens)."""
    if not _MD_URL_SPECIAL_RE.search(url):
        return url
    return "<" + url.replace("<", "%3C").replace(">", "%3E").replace("\n", "%0A") + ">"


class _Ctx:
    """State of one :func:`_build` pass."""

    __slots__ = ("base", "drop", "last", "links", "nav_roles", "seen", "texts")

    def __init__(self, base: str, whole_body: bool) -> None:
        self.base = base
        self.drop = _BOILERPLATE if whole_body else _NEVER
        self.nav_roles = _BODY_NAV_ROLES if whole_body else _NAV_ROLES
        self.links: list[str] = []
        self.seen: set[str] = set()
        self.texts: list[str] = []
        self.last: Any = None  # last node in document order (bs4's next_element chain)


def _skip(el: Any, ctx: _Ctx) -> bool:
    """Leave this element (not its tail) out of the content."""
    tag = el.tag
    if not isinstance(tag, str) or tag in ctx.drop:
        return True
    attrib = el.attrib
    if not attrib:
        return False
    if "hidden" in attrib or attrib.get("aria-hidden", "").lower() == "true":
        return True
    role = attrib.get("role")
    if role and role in ctx.nav_roles:
        return True
    style = attrib.get("style")
    if style and "display:none" in style.replace(" ", "").lower():
        return True
    cls = attrib.get("class")
    if cls and tag in ("a", "span", "td", "div") and ("linenos" in cls or "lineno" in cls):
        return True  # Pygments line numbers
    if tag == "a":
        href = attrib.get("href", "")
        if cls and not _PERMALINK_CLASSES.isdisjoint(cls.split()):
            return True
        if href.startswith("#") and _text_content(el).strip(" \u200b\n\t") in _PERMALINK_TEXTS:
            return True
    return False


def _attrs(el: Any, tag: str, ctx: _Ctx) -> dict[str, str] | None:
    """The few attributes markdownify reads, with URLs made absolute; links collected."""
    if tag == "a":
        href = el.get("href")
        out: dict[str, str] = {}
        if el.get("title"):
            out["title"] = el.get("title")
        if href is not None:
            href = _URL_JUNK_RE.sub("", href).strip()
            if href and not href.lower().startswith(_BAD_SCHEMES):
                absolute = urljoin(ctx.base, href)
                out["href"] = _md_url(absolute)
                if not href.startswith("#") and absolute[:5].lower() in ("http:", "https"):
                    parts = urlsplit(absolute)  # host case-folded, fragment dropped
                    link = urlunsplit((parts.scheme, parts.netloc.lower(), parts.path,
                                       parts.query, ""))
                    if link not in ctx.seen:
                        ctx.seen.add(link)
                        ctx.links.append(link)
        return out
    if tag == "img":
        src = (el.get("src") or "").strip()
        if not src or src.startswith("data:"):
            src = (el.get("data-src") or el.get("data-original") or "").strip()
        out = {"alt": el.get("alt") or ""}
        if el.get("title"):
            out["title"] = el.get("title")
        if src and not src.startswith("data:"):
            out["src"] = _md_url(urljoin(ctx.base, _URL_JUNK_RE.sub("", src)))
        return out
    if tag in ("td", "th"):
        span = el.get("colspan")
        return {"colspan": span} if span else None
    if tag == "ol":
        start = el.get("start")
        return {"start": start} if start else None
    if tag == "video":
        src = el.get("src") or next((s.get("src") for s in el.iter("source") if s.get("src")), "")
        out = {}
        if src:
            out["src"] = _md_url(urljoin(ctx.base, src.strip()))
        if el.get("poster"):
            out["poster"] = _md_url(urljoin(ctx.base, el.get("poster").strip()))
        return out
    return None


def _text(s: str, parent: Tag, prev: Any, ctx: _Ctx) -> NavigableString:
    node = NavigableString(s)
    node.parent = parent
    node.previous_sibling = prev
    if prev is not None:
        prev.next_sibling = node
    node.previous_element = ctx.last
    ctx.last.next_element = node
    ctx.last = node
    parent.contents.append(node)
    ctx.texts.append(s)
    return node


def _build(el: Any, ctx: _Ctx, parent: Tag | None = None) -> Tag:
    """Copy the lxml element ``el`` (already known to be kept) into a bs4 ``Tag``."""
    tag_name = el.tag
    lang_from = el
    if tag_name == "table" and "highlighttable" in (el.get("class") or ""):
        pre = el.find(".//td[@class='code']//pre")  # Pygments table with line numbers
        if pre is not None:
            el, tag_name = pre, "pre"
    tag = Tag(name=tag_name, attrs=_attrs(el, tag_name, ctx))
    tag.parent = parent
    if ctx.last is not None:
        tag.previous_element = ctx.last
        ctx.last.next_element = tag
    ctx.last = tag
    if tag_name == "pre":
        tag.attrs["data-md-lang"] = _code_language(el) or _code_language(lang_from)
    elif tag_name == "table":
        first_row = el.find(".//tr")
        if first_row is not None:
            first_row.set("data-md-head", "1")  # the row that gets the |---| line
    elif tag_name == "tr" and el.get("data-md-head"):
        tag.attrs["data-md-head"] = "1"
    ol_number = None
    if tag_name == "ol":
        start = el.get("start", "").strip()
        ol_number = int(start) if start.isdigit() else 1
    prev: Any = None
    if el.text:
        prev = _text(el.text, tag, None, ctx)
    for child in el:
        if not _skip(child, ctx):
            node = _build(child, ctx, tag)
            if ol_number is not None and node.name == "li":
                node.attrs["data-md-n"] = str(ol_number)
                ol_number += 1
            node.previous_sibling = prev
            if prev is not None:
                prev.next_sibling = node
            tag.contents.append(node)
            prev = node
        if child.tail:
            prev = _text(child.tail, tag, prev, ctx)
    return tag


# --- markdownify, with its hot spots replaced ------------------------------------------------

_UNDERSCORE_RE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")  # not between two letters/digits
_BACKTICKS_RE = re.compile(r"`{3,}")


# markdownify's should_remove_whitespace_inside/outside as set lookups (they were the most
# called functions in the profile).
_BLOCK_INSIDE = frozenset({"p", "blockquote", "article", "div", "section", "ol", "ul", "li",
                           "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "td",
                           "th", "h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCK_OUTSIDE = _BLOCK_INSIDE | {"pre"}
_SPACE_RUN_RE = re.compile(r"[\t\r\n]| {2}")


class _Converter(MarkdownConverter):
    """markdownify with ATX headings, ``-`` bullets, fenced code and pipe tables."""

    class Options(MarkdownConverter.DefaultOptions):
        heading_style = ATX
        bullets = "-"
        newline_style = BACKSLASH  # trailing whitespace is stripped, so no "two spaces"
        table_infer_header = True
        escape_underscores = False  # done in escape(): only where it could mean emphasis

    def process_tag(self, node: Any, parent_tags: Any = None) -> str:
        """Same result as markdownify's, without the per-element ancestor search."""
        if parent_tags is None:
            parent_tags = set()
        name = node.name
        inside = name in _BLOCK_INSIDE
        children_tags = set(parent_tags)
        children_tags.add(name)
        if name in ("td", "th") or (name[0] == "h" and name[1:].isdigit()):
            children_tags.add("_inline")
        if name in ("pre", "code", "kbd", "samp"):
            children_tags.add("_noformat")
        strings: list[str] = []
        for el in node.contents:
            if type(el) is NavigableString:
                if not el.strip():
                    prev_s, next_s = el.previous_sibling, el.next_sibling
                    if inside and (prev_s is None or next_s is None):
                        continue
                    if (getattr(prev_s, "name", None) in _BLOCK_OUTSIDE
                            or getattr(next_s, "name", None) in _BLOCK_OUTSIDE):
                        continue
                s = self.process_text(el, children_tags)
            elif isinstance(el, Tag):
                s = self.process_tag(el, children_tags)
            else:  # comments, doctype: never content
                continue
            if s:
                strings.append(s)
        if name == "pre" or "pre" in parent_tags:
            text = "".join(strings)
        else:  # collapse newlines at child boundaries (at most one blank line)
            out = [""]
            for s in strings:
                lead, content, trail = re_extract_newlines.match(s).groups()
                if out[-1] and lead:
                    lead = "\n" * min(2, max(len(out.pop()), len(lead)))
                out += (lead, content, trail)
            text = "".join(out)
        fn = self.get_conv_fn_cached(name)
        if fn is not None:
            text = fn(node, text, parent_tags=parent_tags)
        return text

    def process_text(self, el: Any, parent_tags: Any = None) -> str:
        """markdownify's, with the block checks as set lookups and the regexes run only when
        there is whitespace to normalise."""
        text = str(el)
        if parent_tags is None:
            parent_tags = set()
        if "pre" not in parent_tags and _SPACE_RUN_RE.search(text):
            text = re_whitespace.sub(" ", re_newline_whitespace.sub("\n", text))
        if "_noformat" not in parent_tags:
            text = self.escape(text, parent_tags)
        prev_s, next_s = el.previous_sibling, el.next_sibling
        parent_block = getattr(el.parent, "name", None) in _BLOCK_INSIDE
        if getattr(prev_s, "name", None) in _BLOCK_OUTSIDE or (parent_block and prev_s is None):
            text = text.lstrip(" \t\r\n")
        if getattr(next_s, "name", None) in _BLOCK_OUTSIDE or (parent_block and next_s is None):
            text = text.rstrip()
        return text

    def escape(self, text: str, parent_tags: Any) -> str:
        if not text:
            return ""
        text = text.replace("*", r"\*")
        if "_" in text:
            text = _UNDERSCORE_RE.sub(r"\\_", text)
        return text

    def convert_pre(self, el: Any, text: str, parent_tags: Any) -> str:
        if not text:
            return ""
        lang = el.attrs.get("data-md-lang") or self.options["code_language"] or ""
        text = strip_pre(text)
        runs = _BACKTICKS_RE.findall(text)
        fence = "`" * max(3, max(map(len, runs), default=0) + 1)
        return f"\n\n{fence}{lang}\n{text}\n{fence}\n\n"

    def convert_img(self, el: Any, text: str, parent_tags: Any) -> str:
        if not el.attrs.get("src"):
            return el.attrs.get("alt", "")
        return super().convert_img(el, text, parent_tags)

    def convert_li(self, el: Any, text: str, parent_tags: Any) -> str:
        text = (text or "").strip()
        if not text:
            return "\n"
        number = el.attrs.get("data-md-n")
        bullet = f"{number}. " if number else "- "
        indent = " " * len(bullet)
        lines = text.split("\n")
        return bullet + "\n".join([lines[0]] + [indent + ln if ln else "" for ln in lines[1:]]) \
            + "\n"

    def convert_td(self, el: Any, text: str, parent_tags: Any) -> str:
        span = el.attrs.get("colspan", "")
        n = max(1, min(1000, int(span))) if span.isdigit() else 1
        return " " + text.strip().replace("\n", " ").replace("|", r"\|") + " |" * n

    convert_th = convert_td

    def convert_tr(self, el: Any, text: str, parent_tags: Any) -> str:
        row = "|" + text + "\n"
        if not el.attrs.get("data-md-head"):
            return row
        cols = 0
        for cell in el.contents:
            if isinstance(cell, Tag) and cell.name in ("td", "th"):
                span = cell.attrs.get("colspan", "")
                cols += max(1, min(1000, int(span))) if span.isdigit() else 1
        return row + "| " + " | ".join(["---"] * max(cols, 1)) + " |\n"


_converters: dict[str, _Converter] = {}


def _converter(code_language: str | None) -> _Converter:
    key = code_language or ""
    conv = _converters.get(key)
    if conv is None:
        conv = _converters[key] = _Converter(code_language=key)
    return conv


# --- tidy ------------------------------------------------------------------------------------

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_FENCE_RE = re.compile(r"^ *(`{3,}|~{3,})")


def _tidy(md: str) -> str:
    """Strip trailing whitespace, keep at most one blank line (outside code blocks)."""
    md = _CONTROL_RE.sub("", md)
    out: list[str] = []
    fence = ""
    blank = False
    for line in md.split("\n"):
        line = line.rstrip()
        if fence:
            out.append(line)
            if line.strip() == fence:
                fence = ""
            continue
        m = _FENCE_RE.match(line)
        if m:
            fence = m.group(1)
        if not line:
            if blank or not out:
                continue
            blank = True
        else:
            blank = False
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""


# --- the entry point -------------------------------------------------------------------------


def html_to_markdown(html: str, url: str, *, code_language_default: str | None = None) -> Page:
    """Convert the main content of ``html`` (fetched from ``url``) to markdown."""
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
    root, whole_body = _main_content(doc)
    ctx = _Ctx(head.base, whole_body)
    tree = _build(root, ctx)
    markdown = _tidy(_converter(code_language_default).process_tag(tree, set()))
    title = head.title or head.og_title
    if not title:
        h1 = next(doc.iter("h1"), None)
        title = _collapse(_text_content(h1)) if h1 is not None else ""
    lang = (doc.get("lang") or doc.get("{http://www.w3.org/XML/1998/namespace}lang") or "")
    return Page(
        title=title,
        markdown=markdown,
        text_chars=len(" ".join(" ".join(ctx.texts).split())),
        content_hash=normalized_hash(markdown),
        canonical=head.canonical,
        noindex=noindex,
        nofollow=nofollow,
        lang=lang.strip() or None,
        description=head.description,
        links=ctx.links,
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
