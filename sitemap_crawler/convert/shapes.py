"""What an element is, by its markup and structure: code and its language, per-line code,
math, gutters, admonitions, tab panels, grid tables, forms that wrap a page.

Shared by ``content`` (which picks the root and the widgets) and ``render`` (which writes
markdown); pure functions of an lxml element.  Imports nothing from the project.
"""

from __future__ import annotations

import re
from typing import Any

from sitemap_crawler.xpath import XPath


def _collapse(text: str | None) -> str:
    return " ".join(text.split()) if text else ""


_GUTTER_TOKENS = frozenset({"linenos", "lineno", "linenodiv", "ln", "lnt", "gutter",
                            "line-numbers-rows", "hljs-ln-numbers", "line-number"})


_GUTTER_RE = re.compile(r"line-?numbers?(?!-)|linenos|lineno(?!-)", re.I)


_LANG_CLASS_RE = re.compile(
    r"(?:^|\s)(?:(?:language|lang|highlight(?:-source)?)-|brush:\s*)([A-Za-z0-9_+#.-]+)")


_NO_LANG = frozenset({"none", "plaintext", "nohighlight", "text-only", "notranslate",
                      "default", "source"})


# the box itself, not its parts (Docusaurus: admonition_xJq3 > admonitionContent_BuS1)
_ADMONITION_RE = re.compile(r"(?:^|\s)(?:theme-)?admonition(?:_[A-Za-z0-9]+)?(?:$|\s)")


_MATH_TOKENS = frozenset({"math", "arithmatex", "katex", "katex-display", "mathjax"})


# lexer names (Pygments, Sphinx) → the names markdown highlighters know
_LANG_NAMES = {"python3": "python", "py3": "python", "ipython3": "python", "ipython": "python",
               "pycon": "python", "ipython3-console": "python",
               "shell-session": "console", "text": "", "guess": "", "txt": ""}




_GRID_COLS_RE = re.compile(r"(?:^|\s)(?:[a-z]{2,3}:)?grid-cols-(\d+)(?:$|\s)")


_GRID_STYLE_RE = re.compile(r"grid-template-columns\s*:\s*([^;]+)")


def code_language(pre: Any) -> str:
    """Language of a code block from the classes/data-lang used by common highlighters."""
    candidates = [pre]
    code = next(pre.iterchildren("code"), None)  # (pre.find("code") without ElementPath)
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
            return _lang_name(lang.strip())
        cls = el.get("class")
        if cls:
            # (the regex only where one of its prefixes is)
            for m in _LANG_CLASS_RE.finditer(cls) if "lang" in cls or "highlight-" in cls \
                    or "brush:" in cls else ():
                if m.group(1).lower() not in _NO_LANG:
                    return _lang_name(m.group(1))
            tokens = cls.split()
            if "sourceCode" in tokens and len(tokens) == 2:  # pandoc: "sourceCode python"
                lang = tokens[1 - tokens.index("sourceCode")]
                if lang.lower() not in _NO_LANG:
                    return _lang_name(lang)
    return ""


def _lang_name(lang: str) -> str:
    return _LANG_NAMES.get(lang.lower(), lang)


def is_math(cls: str) -> bool:
    """A math wrapper by its class token (``mathjax_ignore``/``tex2jax_ignore`` are not)."""
    return ("math" in cls or "arithmatex" in cls) and \
        not _MATH_TOKENS.isdisjoint(cls.split())


def code_lines(el: Any) -> bool:
    """Code without ``<pre>``: a block made only of per-line elements (Doxygen's
    ``div.fragment`` of ``div.line``)."""
    first = el[0] if len(el) else None
    if first is None or not isinstance(first.tag, str) or \
            "line" not in (first.get("class") or "").split():
        return False
    lines = sum(isinstance(c.tag, str) and c.tag in ("div", "span")
                and "line" in (c.get("class") or "").split() for c in el)
    return lines >= 0.5 * len(el)  # (Doxygen appends its hover tooltips, div.ttc)


def content_form(el: Any) -> bool:
    """A ``<form>`` that wraps a page's text (ASP.NET pages, listings in a filter form), not
    only controls and their labels."""
    if el.find(".//h1") is not None or el.find(".//h2") is not None \
            or el.find(".//pre") is not None or el.find(".//article") is not None:
        return True
    text = int(_TEXT_LEN(el))
    if text < 1000:
        return False
    return text - sum(int(_TEXT_LEN(c)) for c in el.iter(
        "select", "label", "button", "script", "style", "textarea")) >= 1000


_TEXT_LEN = XPath("string-length(normalize-space(.))")


def grid_columns(el: Any) -> int:
    """Columns of a CSS-grid block (Tailwind ``grid-cols-N``, inline grid-template-columns)."""
    cls = el.get("class") or ""
    m = _GRID_COLS_RE.search(cls) if "grid-cols-" in cls else None
    if m:
        return int(m.group(1))
    style = el.get("style") or ""
    if "grid-template-columns" in style:
        m = _GRID_STYLE_RE.search(style)
        if m:
            tracks = m.group(1).strip()
            rm = re.match(r"repeat\(\s*(\d+)", tracks)
            return int(rm.group(1)) if rm else len(re.findall(r"(?:[^\s(]+\([^)]*\)|[^\s]+)",
                                                               tracks))
    return _column_period(el) if "table" in cls or "grid" in cls else 0


def _column_period(el: Any) -> int:
    """Columns of a grid whose cells name their column (Javadoc's ``summary-table`` of
    ``col-first``/``col-second``/``col-last`` divs): the period of those names."""
    keys = []
    for c in el:
        if not isinstance(c.tag, str):
            continue
        key = [t for t in (c.get("class") or "").split() if t.startswith("col")]
        if not key:
            return 0
        keys.append(key[0])
    for n in range(2, min(9, len(keys) // 2 + 1)):
        if len(keys) % n == 0 and len(set(keys[:n])) == n and \
                all(k == keys[i % n] for i, k in enumerate(keys)):
            return n
    return 0


def is_gutter(cls: str) -> bool:
    """Line-number gutters of the common highlighters (Pygments, Prism, Chroma, Docusaurus)."""
    low = cls.lower()
    if "ln" not in low and "line" not in low and "gutter" not in low:
        return False  # the common case, without a regex
    return not _GUTTER_TOKENS.isdisjoint(cls.split()) or bool(_GUTTER_RE.search(cls))


class LineChildren(list):  # type: ignore[type-arg]
    """The line children of a per-line code block, walked like an element by _pre_walk."""

    def __init__(self, el: Any) -> None:
        super().__init__(c for c in el if isinstance(c.tag, str)
                         and "line" in (c.get("class") or "").split())
        self.text = None
        self.tag = el.tag


_ADMONITION_WORDS = frozenset({"starlight-aside", "custom-block", "callout", "nextra-callout",
                               "markdown-alert", "admonitionblock"})


_DOCBOOK_BOXES = frozenset({"note", "warning", "tip", "caution", "important", "danger", "hint"})


def is_admonition(el: Any, cls: str) -> bool:
    """A note/tip box: by the generators' names for it, or a DocBook-style ``div.note``
    whose first child is its title."""
    if "admonition" in cls and _ADMONITION_RE.search(cls):
        return True
    tokens = cls.split()
    if not _ADMONITION_WORDS.isdisjoint(tokens):
        return True
    if len(tokens) == 1 and tokens[0] in _DOCBOOK_BOXES and len(el):
        first = el[0]
        return isinstance(first.tag, str) and "title" in (first.get("class") or "")
    return False


def label_of(el: Any) -> str:
    """An admonition's label: its text, else an icon's ``title`` or ``aria-label``."""
    text = _collapse("".join(t for t in el.xpath(".//text()[not(ancestor::svg)]")))
    if text:
        return text
    for node in el.iter():
        for attr in ("title", "aria-label", "alt"):
            if node.get(attr):
                return _collapse(node.get(attr))
    return ""


def tab_panels(tablist: Any, tabs: list[Any]) -> list[Any]:
    """The panel of each tab, in order, or [] when they cannot all be found."""
    root = tablist.getroottree().getroot()
    panels = []
    for t in tabs:
        href = t.get("href") or ""
        ref = t.get("aria-controls") or t.get("for") or (href[1:] if href[:1] == "#" else "")
        found = root.xpath("//*[@id=$i]", i=ref) if ref else []
        if not found or found[0].tag == "input":
            break
        panels.append(found[0])
    if len(panels) == len(tabs):
        return panels
    node = tablist
    for _ in range(2):  # the block after the tab bar (or after its wrapper) holds the panels
        nxt = node.getnext()
        while nxt is not None and not isinstance(nxt.tag, str):
            nxt = nxt.getnext()
        if nxt is not None:
            kids = [c for c in nxt if isinstance(c.tag, str)]
            if len(kids) == len(tabs):
                return kids
        node = node.getparent()
        if node is None:
            break
    return []
