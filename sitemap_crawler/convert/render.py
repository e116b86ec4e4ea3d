"""lxml element → CommonMark + GFM markdown, in one streaming walk written for this crawler.

Why not markdownify: it needs a BeautifulSoup tree (a second tree per page), its hot spots had
to be monkeypatched to be fast enough, and its output does not survive what docs generators
put in the HTML: ``<br>`` and per-line ``<span>/<div>`` inside ``<pre>`` became backslashes
and blank lines, ``<dd>`` became a 4-space indent that CommonMark reads as a code block.
Walking the lxml tree directly fixes both; rendering a generated docs page's main content
takes ~0.95 ms where stock markdownify takes ~6.5 ms (``bench/bench_convert.py --phases``).

The walk appends inline text to a paragraph buffer and emits finished lines with the prefixes
of the enclosing block quotes and list items, so inline elements that wrap block elements
(``<a><div>…</div></a>``) still come out as text.  ``Renderer.skip`` decides what is never
content (scripts, forms, hidden elements, permalinks, line-number gutters, and the elements
the main-content chooser marked as widgets).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from sitemap_crawler.convert.shapes import (
    LineChildren,
    code_language,
    code_lines,
    content_form,
    grid_columns,
    is_admonition,
    is_gutter,
    is_math,
    label_of,
    tab_panels,
)
from sitemap_crawler.convert.signals import hidden_style
from sitemap_crawler.xpath import XPath

# Elements that are never content, even inside <main>: nav (breadcrumbs, prev/next, TOC) and
# footer ("last updated", "edit this page") are there too, so that they do not move the
# content hash.  BOILERPLATE (+ header, aside) applies when the content is the whole <body>.
NEVER = frozenset({
    "script", "style", "noscript", "button", "svg", "iframe", "template", "input",
    "select", "textarea", "canvas", "dialog", "object", "embed", "link", "meta", "head",
    "title", "base", "nav", "footer", "math-field",
})
BOILERPLATE = NEVER | {"header", "aside"}
NAV_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
BODY_NAV_ROLES = NAV_ROLES | {"complementary"}
_TOOLTIP_RE = re.compile(r"(?:^|[\s_-])(?:tooltip|tooltiptext|popover|tippy)(?:$|[\s_-])", re.I)
_PERMALINK_CLASSES = frozenset({"headerlink", "hash-link", "anchor-link", "anchorjs-link",
                                "header-anchor", "heading-anchor", "permalink"})
_PERMALINK_TEXTS = frozenset({"", "¶", "§", "#", "🔗", "⚓", "◆"})
_BAD_SCHEMES = ("javascript:", "vbscript:", "data:", "file:")  # (file: is the reader's disk)
_URL_JUNK_RE = re.compile(r"[\t\n\r]")
_MD_URL_SPECIAL_RE = re.compile(r"[\s()<>]")
_WS_RE = re.compile(r"[ \t\n\r\f\v]+")
_SPACES_RE = re.compile(r" {2,}")
_UNDERSCORE_RE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")  # not between two letters/digits
_HTML_LIKE_RE = re.compile(r"<(?=[A-Za-z/!?])")
_LINE_START_RE = re.compile(r"^(#{1,6}(?:\s|$)|[-+](?:\s|$)|>|=+\s*$|\d{1,9}[.)](?:\s|$))")
_BACKTICKS_RE = re.compile(r"`+")
_FENCE_RUNS_RE = re.compile(r"`{3,}")
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_PRE_BLOCKS = frozenset({"div", "p", "li", "tr", "table", "tbody", "pre"})
_MAX_DEPTH = 120  # each level is ~3 Python frames; deeper, the text is taken flat
_ANCHOR_TEXT_RE = re.compile(r"^(?:section titled|link to (?:this|the) |permalink|"
                             r"direct link to|anchor (?:for|link)|copy link)", re.I)
_WIDGET_LINKS = frozenset({"source", "[src]", "[source]", "src", "run", "expand description",
                           "[−]", "[+]", "[-]",
                           "collapse", "view source", "show source", "copy", "copied!",
                           "copy code", "edit", "[edit]"})
_ROLE_CELLS = ("cell", "gridcell", "columnheader", "rowheader")
# (a tuple for iterdescendants: 2-3x faster than the XPath union of nine .// walks)
_LAYOUT_INSIDE = ("table", "pre", "ul", "ol", "h1", "h2", "h3", "blockquote", "dl")
# (compiled once: ``el.xpath(str)`` compiles the expression on every call)
_HIGHLIGHT_CODE = XPath(".//td[contains(@class,'code') or position()=last()]//pre")


def md_url(url: str) -> str:
    """A URL usable as a markdown link destination (``<...>`` form when it has spaces/parens)."""
    if not _MD_URL_SPECIAL_RE.search(url):
        return url
    return "<" + url.replace("<", "%3C").replace(">", "%3E").replace("\n", "%0A") + ">"


_GRID_NOT_CELL = ("boolean(.//pre|.//table|.//ul|.//ol|.//h1|.//h2|.//h3|.//h4|.//p[2]|"
                  ".//img|.//blockquote)")


def escape_text(text: str) -> str:
    """Escape what would turn prose into markup: emphasis, code spans, raw HTML, escapes."""
    # (five "in" tests: twice as fast as a regex search on a line of prose)
    if not ("*" in text or "_" in text or "<" in text or "`" in text or "\\" in text):
        return text
    text = text.replace("\\", "\\\\").replace("*", r"\*").replace("`", r"\`")
    if "_" in text:
        text = _UNDERSCORE_RE.sub(r"\\_", text)
    if "<" in text:
        text = _HTML_LIKE_RE.sub(r"\\<", text)
    return text


def _code_span(text: str) -> str:
    if not text.isprintable() or "  " in text:  # (the common case needs no regex)
        text = _WS_RE.sub(" ", text)
    if not text.strip():
        return ""
    if "`" not in text:
        return "`" + text + "`"
    runs = _BACKTICKS_RE.findall(text)
    fence = "`" * (max(map(len, runs)) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    return fence + pad + text + pad + fence


def _fence(code: str, lang: str) -> list[str]:
    runs = _FENCE_RUNS_RE.findall(code) if "```" in code else ()
    fence = "`" * max(3, max(map(len, runs), default=0) + 1)
    return [fence + lang, *code.split("\n"), fence]


def _text_of(el: Any) -> str:
    """``"".join(el.itertext())``, without the iterator for an element with no children
    (most ``<code>`` and ``<a>``): the iterator costs more than the text."""
    if not len(el):
        return el.text or ""
    return "".join(el.itertext())


def _has_tab(el: Any) -> bool:
    """``el.find("*/*[@role='tab']") is not None``: a grandchild is a tab (no ElementPath)."""
    for child in el:
        if len(child):
            for grandchild in child:
                if grandchild.get("role") == "tab" and isinstance(grandchild.tag, str):
                    return True
    return False


def _ends_line(el: Any) -> bool:
    """Does a named link close its line, with only permalinks after it (Haddock's
    "Source #" after a signature), so that it is no word of a sentence?"""
    if not el.get("class") or (el.tail or "").strip():
        return False
    for sib in el.itersiblings():
        if sib.tag != "a" or _text_of(sib).strip() not in _PERMALINK_TEXTS or \
                (sib.tail or "").strip():
            return False
    return True


class Renderer:
    """One conversion: walk an lxml subtree, collect markdown lines, links and text."""

    def __init__(self, base: str, *, whole_body: bool, code_default: str = "",
                 drop_elements: set[Any] | None = None, shown: Any = None) -> None:
        self.base = base
        self.shown = shown  # a block hidden by its style that is rendered all the same
        self.drop = BOILERPLATE if whole_body else NEVER
        self.nav_roles = BODY_NAV_ROLES if whole_body else NAV_ROLES
        self.code_default = code_default
        self.widgets = drop_elements or set()
        self.links: list[str] = []
        self.seen: set[str] = set()
        self.text_chars = 0
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.stack: list[list[Any]] = []  # [first prefix, other prefix, first used]
        self.sep = 0  # before the next block: 0 nothing, 1 newline, 2 blank line
        self.flushes = 0
        self.cell = False  # rendering a table cell (or a heading holding blocks): one line
        self.cell_sep = "<br>"  # between the lines of a cell
        self.in_heading = False
        self.tab_labels: list[str] = []
        self.panel_labels: dict[Any, str] = {}
        self.depth = 0

    # --- output ------------------------------------------------------------------------------

    def markdown(self, root: Any, before: Any = ()) -> str:
        for el in before:  # a title block beside the root (content.Choice.before)
            if not self.skip(el):
                self.node(el)
        self.children(root)
        self.flush()
        return "\n".join(self.lines)

    def _prefix(self) -> str:
        out = []
        for item in self.stack:
            if item[2]:
                out.append(item[1])
            else:
                out.append(item[0])
                item[2] = True
        return "".join(out)

    def emit(self, lines: list[str]) -> None:
        self.flushes += 1
        if self.cell:
            self.lines.append(" ".join(lines))
            self.sep = 0
            return
        if not self.stack:  # (the common case: no quote or list item open)
            if self.lines and self.sep == 2:
                self.lines.append("")
            self.sep = 0
            self.lines.extend(lines)
            return
        if self.lines and self.sep == 2:  # only the quotes/items already open continue here
            self.lines.append("".join(item[1] for item in self.stack if item[2]).rstrip())
        self.sep = 0
        for line in lines:
            self.lines.append(self._prefix() + line if line else
                              "".join(item[1] for item in self.stack).rstrip())

    def take_inline(self, start: int = 0) -> str:
        """The paragraph buffer from ``start`` as one line, whitespace collapsed."""
        text = "".join(self.parts[start:]).replace("\n", " ")
        del self.parts[start:]
        return (_SPACES_RE.sub(" ", text) if "  " in text else text).strip()

    def flush(self) -> None:
        if not self.parts:
            return
        text = "".join(self.parts)
        self.parts = []
        if text.isspace():
            return
        if "\n" in text:
            lines = [ln for ln in (_SPACES_RE.sub(" ", s).strip() for s in text.split("\n"))
                     if ln]
            if not lines:
                return
        else:  # the common case: one line, no list to build
            line = _SPACES_RE.sub(" ", text).strip() if "  " in text else text.strip()
            if not line:
                return
            lines = [line]
        if self.cell:
            self.emit([self.cell_sep.join(lines)])
            return
        for i, line in enumerate(lines):
            c = line[0]  # (the regex only where a line can start a block)
            m = _LINE_START_RE.match(line) if c in "#-+>=" or c.isdecimal() else None
            if m:
                if line[0].isdigit():
                    k = m.end(1) - 1 if m.group(1)[-1] in ".)" else len(m.group(1).rstrip()) - 1
                    lines[i] = line[:k] + "\\" + line[k:]
                else:
                    lines[i] = "\\" + line
        for i in range(len(lines) - 1):
            lines[i] += "\\"
        self.emit(lines)

    def brk(self, n: int) -> None:
        """End the paragraph being built; ask for ``n`` newlines before the next block."""
        self.flush()
        if n > self.sep:
            self.sep = n

    # --- walking -----------------------------------------------------------------------------

    def skip(self, el: Any) -> bool:
        """Leave this element (not its tail) out of the content."""
        tag = el.tag
        if not isinstance(tag, str):
            return True
        if tag in self.drop:  # MathJax 2 keeps the TeX in <script type="math/tex">
            return tag != "script" or not (el.get("type") or "").startswith("math/tex")
        if el in self.widgets:
            return True
        if tag == "form":
            return not content_form(el)
        attrib = el.attrib
        if not attrib:
            return False
        role = attrib.get("role")
        if "hidden" in attrib or attrib.get("aria-hidden", "").lower() == "true":
            # hidden tabs are content: one section per tab
            return role != "tabpanel" and el not in self.panel_labels
        if role and role in self.nav_roles:
            return True
        if hidden_style(el):
            return role != "tabpanel" and el not in self.panel_labels and el is not self.shown
        cls = attrib.get("class")
        if cls and tag in ("a", "span", "td", "div") and is_gutter(cls):
            return True
        if cls and self.in_heading and _TOOLTIP_RE.search(cls):
            return True  # hover text in a title (rustdoc's "Notable traits" box): one line
        if tag == "a":
            if cls and not _PERMALINK_CLASSES.isdisjoint(cls.split()):
                return True
            href = attrib.get("href", "")
            if href.startswith("#"):
                text = _text_of(el).strip(" \u200b\xa0\n\t")
                if text in _PERMALINK_TEXTS or _ANCHOR_TEXT_RE.match(text):
                    return True  # a heading's anchor, its screen-reader text included
            if (cls or href.startswith("javascript:")) and self._widget_link(el):
                return True
        elif tag == "summary" and self._widget_link(el):
            return True  # rustdoc's "Expand description": the details stay
        return False

    def _widget_link(self, el: Any) -> bool:
        """A control's word as a whole link ("source", "Run", "Expand description"), not a
        word of a sentence or of a list of links."""
        text = " ".join(_text_of(el).split()).lower()
        if text not in _WIDGET_LINKS:
            return False
        return next(el.iterancestors("p", "li", "td", "th"), None) is None or _ends_line(el)

    def node(self, el: Any) -> None:
        if self.depth > _MAX_DEPTH:  # pathological nesting: its text, without recursion
            self.text(" ".join(el.itertext()))
            return
        self.depth += 1
        handler = _HANDLERS.get(el.tag)
        if handler is None:
            self.children(el)
        else:
            handler(self, el)
        self.depth -= 1

    def children(self, el: Any) -> None:
        text = el.text  # (lxml builds a new string on every .text and .tail)
        if text:
            self.text(text)
        for child in el:
            if not self.skip(child):
                self.node(child)
            tail = child.tail
            if tail:
                self.text(tail)

    def inline_block(self, el: Any) -> str:
        """The inline content of a block element (heading, term, title) as one line."""
        self.brk(2)
        start = len(self.parts)
        self.children(el)
        return self.take_inline(start)

    def text(self, s: str) -> None:
        if s.isspace():  # the indentation between tags: one space at most, never a character
            self.parts.append(" ")
            return
        if not s.isprintable() or "  " in s:  # (a newline or tab is not printable)
            s = _WS_RE.sub(" ", s)
        self.text_chars += len(s)
        self.parts.append(escape_text(s))

    def raw_text(self, s: str) -> None:
        s = _WS_RE.sub(" ", s)
        self.text_chars += len(s)
        self.parts.append(s)

    # --- blocks ------------------------------------------------------------------------------

    def block(self, el: Any) -> None:
        if el in self.panel_labels:
            self.tab_label(self.panel_labels.pop(el))
        cls = el.get("class")
        if cls:
            if is_admonition(el, cls):
                return self.admonition(el)
            if ("grid" in cls or "table" in cls) and self.grid(el):
                return None
            if "tabbed-labels" in cls:
                return self.tablist(el)
            if "tabbed-block" in cls or el.get("role") == "tabpanel":
                return self.tabpanel(el)
            if is_math(cls):
                return self.math_block(el)
        role = el.get("role")
        if role:
            if role == "tablist":
                return self.tablist(el)
            if role == "tabpanel":
                return self.tabpanel(el)
            if role in ("table", "grid", "treegrid"):
                return self.role_table(el)
        elif el.get("style") and self.grid(el):
            return None
        if len(el) and code_lines(el):
            return self.pre(el, lines_only=True)
        self.block_children(el)

    def bold_block(self, el: Any) -> None:
        """A term or title: its inline content in bold, as a paragraph of its own."""
        text = self.inline_block(el)
        self.flush()
        if text:
            if not (text.startswith("**") and text.endswith("**")):
                text = "**" + text + "**"
            self.emit([text])
        self.brk(2)

    def admonition(self, el: Any) -> None:
        """Note/warning boxes of Sphinx, MkDocs, Docusaurus, Starlight, VitePress, Asciidoctor:
        a block quote, the label in bold (also when it is aria-hidden or only an icon's
        ``title``)."""
        self.brk(2)
        self.stack.append(["> ", "> ", False])
        icon = el.find(".//td[@class='icon']")  # Asciidoctor: a table of icon and content
        if icon is not None and icon.getnext() is not None:
            self.label(label_of(icon))
            self.children(icon.getnext())
            self.brk(2)
            self.stack.pop()
            return
        titled = False
        if el.text and el.text.strip():
            self.text(el.text)
        for child in el:
            cls = (child.get("class") or "").lower() if isinstance(child.tag, str) else ""
            if not titled and ("title" in cls or "heading" in cls or "label" in cls
                               or child.tag == "summary"):
                if child.tag in _HEADINGS and not self.skip(child):
                    self.node(child)  # DocBook's h3.title "Note": a heading it stays
                else:
                    self.label(label_of(child))
                titled = True
            elif not self.skip(child):
                if not titled and el.get("aria-label"):
                    self.label(_collapse(el.get("aria-label")))
                titled = True
                self.node(child)
            if child.tail:
                self.text(child.tail)
        self.brk(2)
        self.stack.pop()

    def label(self, text: str) -> None:
        self.brk(2)
        if text:
            self.emit(["**" + escape_text(text) + "**"])
        self.brk(2)

    def tablist(self, el: Any) -> None:
        """Tab labels are remembered and printed above their panels, not as a row of words:
        a panel is found by the tab's ``aria-controls``/``href``/``for``, else by order
        among the next block's children, else each ``role=tabpanel`` takes the next label."""
        self.brk(2)
        if el.find(".//*[@role='tabpanel']") is not None:  # an accordion marked as tabs
            return self.block_children(el)  # (Bootstrap): its headers and panels, in order
        tabs = el.xpath(".//*[@role='tab']") or el.findall(".//label") or \
            [c for c in el if isinstance(c.tag, str)]
        labels = [_collapse("".join(t.itertext())) for t in tabs]
        panels = tab_panels(el, tabs)
        if panels:
            self.panel_labels.update(zip(panels, labels, strict=True))
            self.tab_labels = []
        else:
            self.tab_labels = labels

    def tab_label(self, label: str) -> None:
        self.brk(2)
        if label:
            self.emit(["**" + escape_text(label) + "**"])
            self.sep = 2

    def tabpanel(self, el: Any) -> None:
        self.brk(2)
        if self.tab_labels:
            self.tab_label(self.tab_labels.pop(0))
        self.block_children(el)

    def block_children(self, el: Any) -> None:
        self.brk(2)
        self.children(el)
        self.brk(2)

    def heading(self, el: Any) -> None:
        self.in_heading = True
        try:  # (Erlang's docs put the title in h3 > div.title-name: blocks, one line)
            if not len(el) or next(el.iter("div", "p"), None) is None:  # (el is no div or p)
                text = self.inline_block(el)
            else:
                self.brk(2)
                text = self._one_line(el, " ")
        finally:
            self.in_heading = False
        if text:
            if self.cell:
                self.emit(["**" + text + "**"])
            else:
                self.emit(["#" * _HEADINGS[el.tag] + " " + text])
        self.brk(2)

    def hr(self, el: Any) -> None:
        self.brk(2)
        if self.lines and not self.cell:
            self.emit(["---"])
        self.brk(2)

    def blockquote(self, el: Any) -> None:
        self.brk(2)
        self.stack.append(["> ", "> ", False])
        self.children(el)
        self.brk(2)
        self.stack.pop()

    def list_(self, el: Any) -> None:
        if el.get("role") == "tablist" or (len(el) and _has_tab(el)):
            return self.tablist(el)
        in_item = any(not item[1].startswith(">") for item in self.stack)
        self.brk(1 if in_item else 2)
        number = None
        if el.tag == "ol":
            start = (el.get("start") or "").strip()
            number = int(start) if start.isdigit() else 1
        first = True
        if el.text:
            self.text(el.text)
        for child in el:
            if not self.skip(child):
                if child.tag == "li":
                    marker = "- " if number is None else f"{number}. "
                    if number is not None:
                        number += 1
                    self.flush()
                    if not first:
                        self.sep = 1
                    first = False
                    self.stack.append([marker, " " * len(marker), False])
                    self.children(child)
                    self.flush()
                    self.stack.pop()
                else:
                    self.node(child)
            if child.tail:
                self.text(child.tail)
        self.brk(1 if in_item else 2)


    # --- code --------------------------------------------------------------------------------

    def pre(self, el: Any, lang_from: Any = None, lines_only: bool = False) -> None:
        out: list[str] = []
        # per-line code without <pre>: its line elements, not the tooltips beside them
        self._pre_walk(LineChildren(el) if lines_only else el, out)
        lines = [ln.rstrip() for ln in "".join(out).replace("\r\n", "\n").split("\n")]
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        if not lines:
            return
        self.text_chars += sum(map(len, lines))
        code = "\n".join(lines)
        if self.cell:
            self.parts.append(_code_span(code))
            return
        lang = code_language(el) or (code_language(lang_from) if lang_from is not None
                                     else "") or self.code_default
        self.brk(2)
        self.emit(_fence(code, lang))
        self.brk(2)

    def _pre_skip(self, el: Any, tag: str) -> bool:
        """``skip`` for the inside of code: hidden elements, buttons and gutters only."""
        if tag in self.drop:
            return True
        attrib = el.attrib
        if not attrib:
            return False
        if "hidden" in attrib or attrib.get("aria-hidden", "").lower() == "true":
            return True
        cls = attrib.get("class")
        if cls and is_gutter(cls):
            return True
        return hidden_style(el)

    def _pre_walk(self, el: Any, out: list[str], depth: int = 0) -> None:
        if depth > _MAX_DEPTH:  # pathological nesting: the text, without recursion
            out.append("".join(el.itertext()))
            return
        if el.text:
            out.append(el.text)
        for child in el:
            tag = child.tag
            if not isinstance(tag, str):
                pass
            elif tag == "br":
                out.append("\n")
            elif not self._pre_skip(child, tag):
                if tag in _PRE_BLOCKS:  # one <div> per line (Docusaurus, Shiki, Expressive)
                    if out and not out[-1].endswith("\n"):
                        out.append("\n")
                    self._pre_walk(child, out, depth + 1)
                    if out and not out[-1].endswith("\n"):
                        out.append("\n")
                    if child.tail and not child.tail.strip():
                        continue  # the newline between two line <div>s is that line's end
                else:
                    self._pre_walk(child, out, depth + 1)
            if child.tail:
                out.append(child.tail)

    # --- tables ------------------------------------------------------------------------------

    def table(self, el: Any) -> None:
        cls = el.get("class") or ""
        if "highlighttable" in cls or "lntable" in cls:  # Pygments/Chroma with line numbers
            code = _HIGHLIGHT_CODE(el)
            if code:
                return self.pre(code[-1], lang_from=el.getparent())
        rows = self._rows(el)
        width = max((len(r) for r in rows), default=0)
        if width < 2 or self.cell or next(el.iterdescendants(_LAYOUT_INSIDE), None) is not None:
            return self.block_children(el)  # layout table: its cells are blocks
        self.brk(2)
        caption = next(el.iterchildren("caption"), None)  # (el.find without ElementPath)
        if caption is not None and not self.skip(caption):
            self.bold_block(caption)
        if len(rows) >= 3 and rows[0][0] and not any(rows[0][1:]) and len(rows[0]) == width \
                and any(any(r[1:]) for r in rows[1:]):
            # one cell across the table: its title, not its header (unless every row leaves
            # those columns empty: Haddock's constructors with no docs are rows like it)
            self.label(rows.pop(0)[0])
        self.emit_rows(rows, width)

    def emit_rows(self, rows: list[list[str]], width: int) -> None:
        lines = []
        for i, row in enumerate(rows):
            row = row + [""] * (width - len(row))
            lines.append("|" + "".join(f" {c} |" if c else " |" for c in row))
            if i == 0:
                lines.append("| " + " | ".join(["---"] * width) + " |")
        self.brk(2)
        self.emit(lines)
        self.brk(2)

    def role_table(self, el: Any) -> None:
        """``role=table``/``grid`` built of divs: rows and cells by their roles."""
        rows = []
        for row in el.xpath(".//*[@role='row']"):
            if self.skip(row):
                continue
            cells = [c for c in row.iter() if c.get("role") in _ROLE_CELLS
                     and not self.skip(c)]
            if cells:
                rows.append([self._cell(c) for c in cells])
        width = max((len(r) for r in rows), default=0)
        if width < 2 or self.cell:
            return self.block_children(el)
        self.brk(2)
        self.emit_rows(rows, width)

    def grid(self, el: Any) -> bool:
        """A CSS grid of short cells (a summary table drawn with divs): a table whose first
        row is the header; False when it is a grid of cards or blocks."""
        n = grid_columns(el)
        if n < 2 or self.cell:
            return False
        cells = [c for c in el if isinstance(c.tag, str) and not self.skip(c)]
        if len(cells) < 2 * n or len(cells) % n:
            return False
        for c in cells:
            if c.xpath(_GRID_NOT_CELL):
                return False
        rows = [[self._cell(c) for c in cells[i:i + n]] for i in range(0, len(cells), n)]
        self.brk(2)
        self.emit_rows(rows, n)
        return True

    def _rows(self, table: Any) -> list[list[str]]:
        rows: list[list[str]] = []
        # thead first, even when the HTML puts tbody rows before it; then the table's own
        # rows, then those of its tbody and tfoot groups, in the order of the HTML
        heads: list[Any] = []
        own: list[Any] = []
        rest: list[Any] = []
        for c in table:
            tag = c.tag
            if tag == "tr":
                own.append(c)
            elif tag == "thead":
                heads.extend(r for r in c if r.tag == "tr")
            elif tag in ("tbody", "tfoot"):
                rest.extend(r for r in c if r.tag == "tr")
        for tr in heads + own + rest:
            if self.skip(tr):
                continue
            row: list[str] = []
            for td in tr:
                if td.tag not in ("td", "th") or self.skip(td):
                    continue
                row.append(self._cell(td))
                span = td.get("colspan", "")
                if span.isdigit() and int(span) > 1:
                    row.extend([""] * (min(int(span), 1000) - 1))
            if row:
                rows.append(row)
        return rows

    def _cell(self, td: Any) -> str:
        return self._one_line(td, "<br>").replace("|", r"\|")

    def _one_line(self, el: Any, sep: str) -> str:
        """The content of ``el``, blocks included, as one line (lines joined by ``sep``)."""
        saved = (self.lines, self.parts, self.sep, self.stack, self.cell, self.cell_sep)
        self.lines, self.parts, self.sep, self.stack, self.cell = [], [], 0, [], True
        self.cell_sep = sep
        self.children(el)
        self.flush()
        text = " ".join(self.lines).strip()
        self.lines, self.parts, self.sep, self.stack, self.cell, self.cell_sep = saved
        return text

    # --- inline ------------------------------------------------------------------------------

    def wrap(self, el: Any, mark: str) -> None:
        start, flushes = len(self.parts), self.flushes
        self.children(el)
        if self.flushes != flushes:
            return
        inner = "".join(self.parts[start:])
        stripped = inner.strip()
        if not stripped or (stripped.startswith(mark) and stripped.endswith(mark)):
            return
        del self.parts[start:]
        lead = " " if inner[0].isspace() else ""
        trail = " " if inner[-1].isspace() else ""
        self.parts.append(f"{lead}{mark}{stripped}{mark}{trail}")

    def em(self, el: Any) -> None:
        self.wrap(el, "*")

    def strong(self, el: Any) -> None:
        self.wrap(el, "**")

    def strike(self, el: Any) -> None:
        self.wrap(el, "~~")

    def code(self, el: Any) -> None:
        cls = el.get("class")
        if cls and is_math(cls):
            return self.raw_text("".join(el.itertext()))
        text = _text_of(el)
        self.text_chars += len(text)
        self.parts.append(_code_span(text))

    def a(self, el: Any) -> None:
        start, flushes = len(self.parts), self.flushes
        self.children(el)
        if self.flushes != flushes:
            return
        raw = "".join(self.parts[start:])
        text = self.take_inline(start)
        # the space at the link's edges stays outside it: <a>&amp;mut </a>T is "[&mut](…) T"
        lead = " " if raw[:1].isspace() and text else ""
        trail = " " if raw[-1:].isspace() and text else ""
        href = el.get("href")
        if href is not None:
            href = _URL_JUNK_RE.sub("", href).strip()
        if not href or href.lower().startswith(_BAD_SCHEMES):
            self.parts.append(lead + text + trail)
            return
        absolute = urljoin(self.base, href)
        if not href.startswith("#") and absolute[:5].lower() in ("http:", "https"):
            parts = urlsplit(absolute)  # host case-folded, fragment dropped
            link = urlunsplit((parts.scheme, parts.netloc.lower(), parts.path, parts.query, ""))
            if link not in self.seen:
                self.seen.add(link)
                self.links.append(link)
        if not text:
            return
        title = el.get("title")
        title = ' "' + _collapse(title).replace('"', '\\"') + '"' if title else ""
        self.parts.append(f"{lead}[{text}]({md_url(absolute)}{title}){trail}")

    def img(self, el: Any) -> None:
        src = (el.get("src") or "").strip()
        if not src or src.startswith("data:"):
            src = (el.get("data-src") or el.get("data-original") or "").strip()
        alt = escape_text(_collapse(el.get("alt") or "")).replace("[", r"\[").replace("]", r"\]")
        if not src or src.startswith("data:"):
            if alt:
                self.parts.append(alt)
            return
        url = md_url(urljoin(self.base, _URL_JUNK_RE.sub("", src)))
        title = el.get("title")
        title = ' "' + _collapse(title).replace('"', '\\"') + '"' if title else ""
        self.parts.append(f"![{alt}]({url}{title})")

    def br(self, el: Any) -> None:
        self.parts.append("\n")

    def math(self, el: Any) -> None:
        """MathML: the TeX it was written in when the page kept it, else its text."""
        tex = el.xpath(".//*[local-name()='annotation'][@encoding='application/x-tex']")
        text = _collapse("".join(tex[0].itertext())) if tex else \
            (el.get("alttext") or _collapse("".join(el.itertext())))
        if not text:
            return
        self.text_chars += len(text)
        if el.get("display") == "block":
            self.brk(2)
            self.emit(["$$", text, "$$"])
            self.brk(2)
        else:
            self.parts.append(f"${text}$")

    def math_block(self, el: Any) -> None:
        """MathJax/arithmatex source (``\\(...\\)``, ``$$...$$``) is kept as written."""
        text = "".join(el.itertext()).strip()
        if not text:
            return
        self.text_chars += len(text)
        if el.tag in ("span", "code"):
            self.parts.append(_WS_RE.sub(" ", text))
            return
        self.brk(2)
        self.emit([ln.rstrip() for ln in text.split("\n")])
        self.brk(2)

    def tex_script(self, el: Any) -> None:
        text = (el.text or "").strip()
        if text:
            self.text_chars += len(text)
            if "mode=display" in (el.get("type") or ""):
                self.brk(2)
                self.emit(["$$", text, "$$"])
                self.brk(2)
            else:
                self.parts.append(f"${_WS_RE.sub(' ', text)}$")

    def span(self, el: Any) -> None:
        cls = el.get("class")
        if cls and is_math(cls):
            return self.raw_text("".join(el.itertext()))
        self.children(el)

    def video(self, el: Any) -> None:
        src = el.get("src") or next((s.get("src") for s in el.iter("source") if s.get("src")),
                                    "")
        if src:
            url = md_url(urljoin(self.base, src.strip()))
            self.parts.append(f"[video]({url})")


def _collapse(text: str | None) -> str:
    return " ".join(text.split()) if text else ""


_HANDLERS: dict[str, Any] = {
    **{t: Renderer.block for t in (
        "p", "div", "section", "article", "main", "header", "footer", "aside", "figure",
        "figcaption", "address", "center", "details", "fieldset", "hgroup", "body", "html",
        "tbody", "thead", "tfoot", "tr", "td", "th", "caption", "dd", "li", "legend",
        "picture", "search", "menu")},
    **{t: Renderer.heading for t in _HEADINGS},
    "dl": Renderer.block_children, "dt": Renderer.bold_block, "summary": Renderer.bold_block,
    "blockquote": Renderer.blockquote, "ul": Renderer.list_, "ol": Renderer.list_,
    "pre": Renderer.pre, "table": Renderer.table, "hr": Renderer.hr,
    "em": Renderer.em, "i": Renderer.em, "cite": Renderer.em, "var": Renderer.em,
    "dfn": Renderer.em,
    "strong": Renderer.strong, "b": Renderer.strong,
    "del": Renderer.strike, "s": Renderer.strike, "strike": Renderer.strike,
    "code": Renderer.code, "kbd": Renderer.code, "samp": Renderer.code, "tt": Renderer.code,
    "a": Renderer.a, "img": Renderer.img, "br": Renderer.br, "math": Renderer.math,
    "span": Renderer.span, "video": Renderer.video, "script": Renderer.tex_script,
}
