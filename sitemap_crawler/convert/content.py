"""Which element of a page is its main content, and which blocks inside it are widgets.

Chosen from signals every generator emits, not from a list of class names per site:

1. the generator's own content element: ``itemprop=articleBody`` (schema.org), ``<main>`` or
   ``role=main`` — and the single ``<article>`` inside it when that holds the text (Docusaurus
   and MkDocs Material put the TOC column and sidebars inside ``<main>``), else one ``<article>``
   that holds most of the articles' text;
2. without one, text density: every paragraph scores its length and commas for its ancestors
   (paragraphs inside header/nav/footer/aside or boilerplate-named regions do not count), and
   the root is the deepest element that still holds 75 % of the score;
3. a root with almost no text while the page has more falls back to a wider one (the density
   pick, then the body), so a real page is not dropped as too short; ``Choice.kind`` records it.

The density pick does not stop inside one of several sibling sections (DocBook's refsect1s)
or inside a data table's rows, counts summaries under linked headlines (teasers) at a fifth,
and takes the page's title block along.

Inside the root, blocks are widgets when their class/id says boilerplate in a generic word
(``share``, ``related``, ``breadcrumb``, ``pagination``, ``toc``, ``footer`` ...) and they are
small or mostly links, when they are a short block whose text is a widget's ("Was this page
helpful?", "Last updated ...", "8 min read", "Edit this page", "Version: 3.2"), when they are a
list of in-page ``#`` links (an on-page TOC), or a ``rel=prev/next`` bar.  Blocks holding a
page heading, code or a table, or a large share of the root's text, are never widgets.

A class word is a guess, so it is checked against structure (issue 19): it never removes a
heading, a term, a table's row or cell, or inline text inside a sentence or a line of code;
a named block that holds prose stays unless it is link-dense or looks like a comment thread
(a form, avatars, repeated items).  Widgets found by structure alone: groups of teaser cards
(linked headlines of other pages), source views behind a "View Source" toggle, a code
block's language label, a short box around a "source" link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from sitemap_crawler.convert.render import BOILERPLATE
from sitemap_crawler.convert.shapes import code_language, code_lines, grid_columns

_STRONG_WORDS = (
    "breadcrumbs?|pagination|pager|paginator|sidebar|side-bar|navbar|nav-bar|footer|toc|"
    "related|share|sharing|social|socials|comments?|newsletter|subscribe|subscription|signup|"
    "promo|promotion|advert|advertisement|ads?|ad-slot|sponsor|sponsored|cookie|cookies|"
    "consent|popup|modal|outbrain|taboola|recommended|recommendations|trending|most-popular|"
    "prev-next|prevnext|skip-link|skiplink|print|feedback|rating|edit-link|editlink|"
    "last-updated|lastupdated|tags|tag-list|taglist|categories|author-bio|newsletter-signup|"
    "navheader|navfooter|fancy_toc|toc-mobile|rail|right-rail|left-rail"
)
_WEAK_WORDS = "nav|navigation|menu|header|masthead|banner|meta|byline|hd|ft|widget|tools|links"
_STRONG_RE = re.compile(rf"(?:^|[\s_-])(?:{_STRONG_WORDS})(?:$|[\s_-])", re.I)
_WEAK_RE = re.compile(rf"(?:^|[\s_-])(?:{_WEAK_WORDS})(?:$|[\s_-])", re.I)
# Parts of a news page that its article text does not include: photo galleries, captions and
# credits, bylines and datelines, embedded videos.  Only for news markup and density roots:
# a docs figure caption is content.
_NEWS_WORDS = ("captions?|credits?|gallery|slideshow|carousel|byline|bylines|author|authors|"
               "dateline|timestamp|published|video|videos|video-player|photo|photos|"
               "image-credit|media-credit|lightbox|figcaption|inline-media|headline-list")
_NEWS_RE = re.compile(rf"(?:^|[\s_-])(?:{_NEWS_WORDS})(?:$|[\s_-])", re.I)
_ANY_WORD_RE = re.compile(rf"(?:^|[\s_-])(?:{_STRONG_WORDS}|{_WEAK_WORDS}|{_NEWS_WORDS})"
                          r"(?:$|[\s_-])", re.I)
_CONTENT_RE = re.compile(r"(?:^|[\s_-])(?:content|article|body|main|post|entry|story|text|"
                         r"markdown|typeset|document|prose)(?:$|[\s_-])", re.I)
_WIDGET_TEXT_RE = re.compile(
    r"^\s*(?:was this (?:page|article|doc|information|helpful)|is this page helpful|"
    r"did (?:you|this) (?:find|help|page)|how helpful|rate this|"
    r"last (?:updated?|modified|edited|reviewed)|updated(?: on)?\s*[:\d]|page last|"
    r"\d+\s*(?:-\s*)?min(?:ute)?s?\s*read|reading time|edit (?:this|on|page)|"
    r"improve this (?:page|doc)|suggest (?:an )?edits?|report an? (?:issue|problem)|"
    r"on this page|in this (?:article|page)|table of contents|"
    r"share(?: this)?(?: article| page| story)?\s*:?\s*$|print(?: this)?(?: page)?\s*$|"
    r"published\b|image \d+ of \d+|version\s*:?\s*v?\d|v\d+(?:\.\d+)+\s*$|tags?\s*:|"
    r"back to top|skip to|defined in \S+\.\w+:\d+\s*$|"
    r"(?:« ?|← ?|‹ ?)?(?:previous|prev|next)(?: ?»| ?→| ?›)?\s*(?:page|article|post|chapter)?"
    r"\s*:?\s*$|advertisement\s*$|sign up for|subscribe to|follow us)", re.I)
_KEEP_TAGS = frozenset({"h1", "h2", "pre", "table"})
_PARA_TAGS = ("p", "pre", "td", "blockquote", "dd", "div", "span", "section", "article",
              "font", "center")
_INLINE = frozenset({"a", "em", "strong", "b", "i", "u", "code", "span", "font", "small",
                     "sup", "sub", "abbr", "cite", "q", "mark", "time"})
_BODY_RE = re.compile(r"(?:^|\s)(?:[\w-]*(?:article|story|entry|post|news)[-_]?(?:body|content|"
                      r"text)|articlebody|body-?text|story|article-?body)(?:$|\s)", re.I)
_NOT_TEXT = ("script", "style", "noscript", "template")
_NEWS_KINDS = frozenset({"article", "articleBody"})
_COMMENT_RE = re.compile(r"comment", re.I)
_COMMENT_ITEMS = ".//*[contains(@class, 'comment') or contains(@id, 'comment')]"
_ITEMS = ".//article|.//li"
_SOURCE_LINKS = frozenset({"source", "[src]", "[source]", "src"})
_SOURCE_TOGGLE_RE = re.compile(r"^(?:view |show )?source(?: code)?(?: in \S+)?$", re.I)
_BYLINE_RE = re.compile(r"byline|author|dateline|published", re.I)
_NAMED_OUTSIDE_CODE = etree.XPath(
    ".//*[@class or @id][not(ancestor-or-self::pre)][not(ancestor-or-self::code)]")
# (the cheap length test first: normalize-space() builds a string per text node)
_SHORT_TEXTS_OUTSIDE_CODE = etree.XPath(
    ".//text()[string-length() < 200][normalize-space()][not(ancestor::pre)]"
    "[not(ancestor::code)]")
# The length of an element's text, counted by libxml2: 5x faster than joining itertext() in
# Python (0.02 against 0.10 ms for a 37 KB <main>), the same count (code points).
_STRLEN = etree.XPath("string-length(string(.))")
_STR = etree.XPath("string(.)")
_ITEMPROPS = etree.XPath("//@itemprop")
_LABEL_TEXT = etree.XPath(".//text()[not(ancestor::button)][normalize-space()]")
_IN_CELL = etree.XPath("boolean(ancestor-or-self::td|ancestor-or-self::th)")
_ROLES = etree.XPath("//@role")


@dataclass
class Choice:
    """The content root, how it was found, and the widget elements inside it to leave out."""

    root: Any
    kind: str  # articleBody | main | main>article | role=main | article | density | body
    whole_body: bool
    widgets: set[Any] = field(default_factory=set)
    before: list[Any] = field(default_factory=list)  # a title block rendered above the root


def text_len(el: Any) -> int:
    """Characters of visible text below ``el`` (script/style text not counted)."""
    total = int(_STRLEN(el))
    for s in el.iter(_NOT_TEXT):
        total -= int(_STRLEN(s))
    return total


def _link_len(el: Any) -> int:
    return sum(int(_STRLEN(a)) for a in el.iter("a"))


def _hidden(el: Any) -> bool:
    attrib = el.attrib
    if not attrib:
        return False
    if "hidden" in attrib or attrib.get("aria-hidden", "").strip().lower() == "true":
        return True
    style = attrib.get("style")
    return bool(style) and "display:none" in style.replace(" ", "").lower()


def _visible(els: Any) -> list[Any]:
    return [e for e in els if not _hidden(e)]


_SLUG_ID_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "dt", "section", "span", "a",
                           "li", "p", "code", "table", "figure"})
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# never a widget by a class word: headings, terms, and a table's parts (Apache's tr.header)
_TERMS = _HEADING_TAGS | {"dt", "summary", "caption", "th", "td", "tr", "thead", "tbody",
                          "tfoot"}
_INLINE_MORE = _INLINE | {"b", "i", "kbd", "var", "samp", "tt", "label", "dfn"}


def _names(el: Any) -> str:
    """Class and id words; an id is skipped where generators make it from the text (headings,
    API terms, sections: a section titled "Share" has id="share")."""
    cls, id_ = el.get("class"), el.get("id")
    if id_ and (el.tag in _SLUG_ID_TAGS or (len(el) and el[0].tag in _HEADING_TAGS)):
        id_ = None
    if cls and id_:
        return cls + " " + id_
    return cls or id_ or ""


def _with_attr(found: list[Any], value: str) -> list[Any]:
    """The elements of ``//@name`` results whose value is ``value`` (libxml2 lists the
    attributes faster than it tests ``//*[@name='value']`` on every element)."""
    return [a.getparent() for a in found if a == value]


def _semantic(doc: Any) -> tuple[Any, str] | None:
    body = _visible(_with_attr(_ITEMPROPS(doc), "articleBody"))
    if len(body) == 1:
        return body[0], "articleBody"
    main = next(iter(_visible(doc.iter("main"))), None)
    kind = "main"
    if main is None:
        main = next(iter(_visible(_with_attr(_ROLES(doc), "main"))), None)
        kind = "role=main"
    if main is not None:
        if main.tag == "article":
            return main, kind
        articles = _visible(main.iter("article"))
        if len(articles) == 1 and text_len(articles[0]) >= 0.3 * text_len(main):
            return articles[0], "main>article"
        return main, kind
    articles = _visible(doc.iter("article"))
    if len(articles) == 1:
        return articles[0], "article"
    if len(articles) > 1:  # one story among teasers, or a listing (then no single root)
        # an <article> holding <article>s is a list of teasers; one story beside it is the page
        alone = [a for a in articles if a.find(".//article") is None
                 and next(a.iterancestors("article"), None) is None]
        if len(alone) == 1 and len(alone) < len(articles) and text_len(alone[0]) >= 500:
            return alone[0], "article"
        sizes = sorted(((text_len(a), i) for i, a in enumerate(articles)), reverse=True)
        if sizes[0][0] >= 500 and sizes[0][0] >= 3 * sizes[1][0]:
            return articles[sizes[0][1]], "article"
    return None


def _p_text(el: Any) -> int:
    return sum(int(_STRLEN(p)) for p in el.iter("p"))


def _named_body(root: Any) -> Any:
    """An element named like an article body (``article-body``, ``entry-content``...) inside
    ``root`` that holds most of its paragraphs: news templates put rails and teasers beside
    it inside the same ``<article>``."""
    total = _p_text(root)
    if not total:
        return root
    for el in root.iter("div", "section", "article"):
        names = _names(el)
        if el is not root and names and _BODY_RE.search(names) and \
                _p_text(el) >= 0.6 * total:
            return el
    return root


def _boiler_region(el: Any, cache: dict[Any, bool]) -> bool:
    """Is ``el`` (or an ancestor) header/nav/footer/aside or a boilerplate-named region?"""
    chain = []
    node = el
    result = False
    while node is not None:
        if node in cache:
            result = cache[node]
            break
        chain.append(node)
        tag = node.tag
        if tag in BOILERPLATE or node.get("role") in ("navigation", "banner", "contentinfo",
                                                      "complementary", "search"):
            result = True
            break
        names = _names(node)
        if names and _STRONG_RE.search(names) and not _CONTENT_RE.search(names):
            result = True
            break
        node = node.getparent()
    for n in chain:
        cache[n] = result
    return result


def _own_text(el: Any) -> tuple[str, int]:
    """The text an element holds itself (with its inline children), and how much is links."""
    parts = [el.text or ""]
    links = 0
    for c in el:
        tag = c.tag
        if tag in _INLINE:
            t = "".join(c.itertext())
            parts.append(t)
            if tag == "a":
                links += len(t)
        if c.tail:
            parts.append(c.tail)
    return " ".join("".join(parts).split()), links


def _density_root(body: Any) -> tuple[Any, dict[Any, float]]:
    """The deepest element holding 75 % of the text score (readability-like): every element
    whose own text is a paragraph (25+ characters) scores for itself and its ancestors."""
    scores: dict[Any, float] = {}
    cache: dict[Any, bool] = {}
    teasers = _teasers(body)
    for p in body.iter(_PARA_TAGS):
        text, links = _own_text(p)
        if len(text) < 25 or _boiler_region(p, cache):
            continue
        scores[p] = (1 + text.count(",") + min(len(text) / 100, 3)) * \
            max(0.0, 1 - links / len(text)) ** 2
        parent = p.getparent()
        if parent in teasers or (parent is not None and parent.getparent() in teasers):
            scores[p] *= 0.2  # a summary under a linked headline: a teaser of another page
    # each score counts for every ancestor: summed children first (reverse document order),
    # linear in the page even when it nests a million levels deep
    for el in reversed(list(body.iter())):
        own = scores.get(el)
        if own and el is not body:
            parent = el.getparent()
            if parent is not None:
                scores[parent] = scores.get(parent, 0.0) + own
    total = scores.get(body, 0.0)
    if not total:
        return body, scores
    node = body
    while True:
        best = max((c for c in node if isinstance(c.tag, str)), key=lambda c: scores.get(c, 0),
                   default=None)
        if best is None or scores.get(best, 0) < 0.75 * total or \
                _one_of_sections(best, scores):
            if node.tag in _TABLE_PARTS or node.find(".//table") is not None:
                node = _around_table(node, body, scores)
            return node, scores
        node = best


_CARD = 600  # characters at most in one teaser card


def _teasers(body: Any) -> set[Any]:
    """Blocks headed by a linked headline (h2-h6 that is all link): teaser cards of other
    pages, whose summaries are not this page's text."""
    out = set()
    for h in body.iter("h2", "h3", "h4", "h5", "h6"):
        size = int(_STRLEN(h))
        if size and _link_len(h) >= 0.8 * size:
            parent = h.getparent()  # a card is short: a post under a linked title is not
            if parent is not None and text_len(parent) <= _CARD:
                out.add(parent)
                grand = parent.getparent()
                if len(parent) <= 2 and grand is not None and text_len(grand) <= _CARD:
                    out.add(grand)
    return out


def _with_title(root: Any, body: Any, scores: dict[Any, float], news: bool) -> Any:
    """The title above the text block belongs to it: the parent holding the page's one <h1>,
    or on a page that is not a news story the nearest ancestor (four levels at most) holding
    it when the block is most of that ancestor's text (TypeDoc: the h1 sits above a column
    of member groups).  A story's headline and standfirst are not its body."""
    if root is body or root.find(".//h1") is not None:
        return root
    parent = root.getparent()
    if news:
        return parent if parent is not None and parent is not body and \
            len(parent.findall(".//h1")) == 1 else root
    node, size = root, scores.get(root, 0.0)
    for _ in range(4):
        node = node.getparent()
        if node is None or node is body:
            return root
        h1s = node.findall(".//h1")
        if len(h1s) > 1:
            return root
        if h1s:
            return node if size >= 0.6 * scores.get(node, 0.0) else root
    return root


def _title_block(root: Any, doc: Any) -> Any:
    """The small block just before ``root`` that holds the page's one <h1> (AsciiDoc's
    div#header with the title and NAME line, beside div#content), or None."""
    if root.find(".//h1") is not None or len(doc.findall(".//h1")) != 1:
        return None
    node = root
    for _ in range(2):
        prev = node.getprevious()
        while prev is not None and not isinstance(prev.tag, str):
            prev = prev.getprevious()
        if prev is not None and (prev.tag == "h1" or prev.find(".//h1") is not None):
            size = text_len(prev)
            if size <= max(300, 0.25 * text_len(root)) and _link_len(prev) <= 0.5 * size:
                return prev
            return None
        node = node.getparent()
        if node is None or node.tag == "body":
            return None
    return None


_TABLE_PARTS = frozenset({"table", "thead", "tbody", "tfoot", "tr"})


def _around_table(node: Any, body: Any, scores: dict[Any, float]) -> Any:
    """A data table's rows are not the page: the block around the table with its heading
    and intro (DocBook's catalog pages: div.sect1 > h2, p, div.table > div.table-contents)."""
    while node.tag in _TABLE_PARTS and node is not body:
        node = node.getparent()
    up = node
    for _ in range(4):  # the nearest titled block around it, if it is mostly the table
        if up.xpath(_HAS_TITLE):
            return up
        parent = up.getparent()
        if parent is None or parent is body or \
                scores.get(parent, 0.0) > 1.5 * scores.get(up, 0.0):
            break
        up = parent
    return node


def _one_of_sections(el: Any, scores: dict[Any, float]) -> bool:
    """Is ``el`` one titled section among sibling sections of the same kind (DocBook's
    ``refsect1``s, ``section``s) that carry text too?  The page is all of them, not its
    longest one."""
    if not _titled(el):
        return False
    cls = el.get("class")
    parent = el.getparent()
    if parent is None or (cls is None and el.tag != "section"):
        return False  # (unnamed divs are columns as often as sections)
    others = sum(scores.get(s, 0.0) for s in parent
                 if s is not el and s.tag == el.tag and s.get("class") == cls and _titled(s))
    return others >= 0.15 * scores.get(el, 0.0)


def _titled(el: Any) -> bool:
    first = next((c for c in el if isinstance(c.tag, str)), None)
    if first is None:
        return False
    if first.tag in _HEADING_TAGS:
        return True  # DocBook puts the heading one level down: div.titlepage > div > h2
    return first.find(".//h1") is not None or first.find(".//h2") is not None or \
        first.find(".//h3") is not None


def _widgets(root: Any, news: bool) -> set[Any]:
    """Blocks inside the content root that are widgets, by the signals in the module doc."""
    out: set[Any] = set()
    root_len = max(text_len(root), 1)

    def protected(el: Any, size: int, share: float = 0.4) -> bool:
        if size > share * root_len:
            return True
        return any(True for _ in el.iter(_KEEP_TAGS))

    if news:  # photos and captions; a figure holding code or a table is content
        out.update(f for f in root.iter("figure", "figcaption")
                   if f.find(".//pre") is None and f.find(".//table") is None
                   and f.find(".//code") is None)
    # code is never a widget (Prism marks comments <span class="token comment">); libxml2
    # selects the named elements outside code, Python looks only at those
    for el in _NAMED_OUTSIDE_CODE(root):
        # a class word never removes a heading or a term (rustdoc's h4.code-header), nor
        # inline text in a sentence or a line of code (Asciidoctor's b.menu, span.comment)
        tag = el.tag
        if tag in _TERMS:
            continue
        names = _names(el)
        if not names or not _ANY_WORD_RE.search(names):
            continue
        news_word = news and _NEWS_RE.search(names)
        if tag in _INLINE_MORE and not news_word and _in_text(el):
            continue  # a word of a sentence, a heading or a line of code (b.menu, span.comment)
        strong = _STRONG_RE.search(names) or news_word
        weak = not strong and _WEAK_RE.search(names)
        if not (strong or weak) or _CONTENT_RE.search(names):
            continue
        if el.get("role") == "tablist" or el.find(".//*[@role='tab']") is not None:
            continue  # tab labels: the renderer puts each above its panel
        parent = el.getparent()
        if parent is not None and grid_columns(parent):
            continue  # a cell of a grid table ("table-header col-first")
        size = text_len(el)
        links = _link_len(el)
        if strong and size and links / size > 0.5 and size < 0.6 * root_len and \
                not any(True for _ in el.iter("h1", "h2", "pre")):
            out.add(el)  # a navigation table (DocBook's navheader: Prev, Up, Next) is a widget
            continue
        if protected(el, size, 0.6 if strong else 0.4) or \
                (links <= 0.3 * size and _holds_prose(el, names, news)):
            continue
        if strong or (size and links / size > 0.5) or size < 80:
            out.add(el)
    for lst in root.iter("ul", "ol", "div", "section", "details"):
        if lst is root or lst in out:
            continue
        anchors = lst.findall(".//a[@href]")
        if len(anchors) >= 3 and all(a.get("href", "").startswith("#") for a in anchors):
            size = text_len(lst)
            if size and _link_len(lst) / size > 0.8 and not protected(lst, size):
                out.add(lst)  # an on-page table of contents
    for a in root.iter("a"):  # "1.0.0 · source": a source link and the stamps beside it
        if not len(a) and (a.text or "").strip().lower() in _SOURCE_LINKS:
            box = a.getparent()
            if box is not None and box is not root and box.tag in ("span", "div") and \
                    text_len(box) <= 60 and box.find(".//h1") is None:
                out.add(box)
    for pre in root.iter("pre"):
        out.update(_language_labels(pre, root))
    inputs: dict[str, Any] | None = None
    for ctl in root.iter("label", "summary"):  # "View Source": the source behind a toggle
        if _SOURCE_TOGGLE_RE.match(" ".join("".join(ctl.itertext()).split())):
            if inputs is None:
                inputs = {i.get("id"): i for i in root.iter("input") if i.get("id")}
            target = ctl.getparent() if ctl.tag == "summary" else _toggled(ctl, inputs)
            if target is not None and target is not root:
                out.add(ctl)
                out.add(target)
    for a in root.xpath(".//a[@rel='prev' or @rel='next']"):
        out.add(_climb(a, root, 200))
    for s in _SHORT_TEXTS_OUTSIDE_CODE(root):  # (a table's cells are its data)
        if _WIDGET_TEXT_RE.match(s) and not _IN_CELL(s.getparent()):
            el = s.getparent()
            if s.is_tail:
                continue
            if el is root or text_len(el) > 160:
                continue
            el = _climb(el, root, 160)
            if not protected(el, text_len(el)):
                out.add(el)
    # a group of three or more teaser cards (linked headlines of other pages: related posts,
    # carousels) that is not most of the page, even inside <main>
    teasers = _teasers(root)
    for group in {t.getparent() for t in teasers if t.getparent() is not None}:
        items = [c for c in group if c in teasers]
        if len(items) >= 3 and group is not root and group not in out:
            size = text_len(group)
            if not protected(group, size, 0.4):
                out.add(group)
    if news:  # no generator markup to trust: link lists without prose are menus
        for el in root.iter("ul", "ol", "div", "section", "table", "aside", "header"):
            if el is root or el in out:
                continue
            anchors = el.findall(".//a")
            if len(anchors) < 3:
                continue
            size = text_len(el)
            if not size or _link_len(el) / size <= 0.4 or protected(el, size):
                continue
            if any(_prose(p) for p in el.iter("p")) or _reference(el):
                continue
            out.add(el)
    return out


_HAS_HEADING = "boolean(.//h1|.//h2|.//h3|.//h4|.//h5|.//h6)"
_HAS_TITLE = "boolean(.//h1|.//h2|.//h3)"
_SIGNATURE_RE = re.compile(r"signature|(?:^|[\s_-])sig(?:$|[\s_-])", re.I)


def _reference(el: Any) -> bool:
    """An API entry, not a menu: a signature, or a heading with an anchor id whose text is
    not a link (TypeDoc's member sections, whose types are links)."""
    names = _names(el)
    if names and _SIGNATURE_RE.search(names):
        return True
    for h in el.iter("h2", "h3", "h4", "h5", "h6"):
        if h.get("id") and int(_STRLEN(h)) > _link_len(h):
            return True
    return False


_TEXT_BLOCKS = frozenset({"p", "blockquote", "pre", "code", "h1", "h2", "h3", "h4", "h5", "h6"})


def _in_text(el: Any) -> bool:
    """Is an inline element part of running text or code, rather than a block of its own?"""
    node = el.getparent()
    for _ in range(4):
        if node is None:
            return False
        if node.tag in _TEXT_BLOCKS or code_lines(node):
            return True
        node = node.getparent()
    return False


def _holds_prose(el: Any, names: str, news: bool) -> bool:
    """Written text under a boilerplate-sounding name (TypeDoc's ``tsd-comment`` doc
    comment, a post in a ``byline``-named box) is content, unless it is a comment thread:
    several items named like comments, or a reply form."""
    if _COMMENT_RE.search(names):  # a doc comment (TypeDoc's tsd-comment), or a thread?
        return not (el.find(".//form") is not None or el.find(".//textarea") is not None
                    or el.find(".//img") is not None or len(el.xpath(_COMMENT_ITEMS)) >= 2
                    or len(el.xpath(_ITEMS)) >= 2 or _COMMENT_RE.search(_STR(el))) \
            and int(_STRLEN(el)) >= 20  # ("Comments are closed" speaks of comments)
    paras = [p for p in el.iter("p") if _prose(p, 80)]
    if news and _NEWS_RE.search(names):  # a story in a byline box, not a gallery's captions
        return len(paras) >= 3 and bool(_BYLINE_RE.search(names)) and \
            el.find(".//img") is None
    return len(paras) >= 2 or (len(paras) == 1 and el.find(".//a") is None)


def _language_labels(pre: Any, root: Any) -> list[Any]:
    """A code block's language shown as a label beside it (VitePress' span.lang "sh"):
    short siblings in the block's wrapper whose text is the block's language."""
    lang = code_language(pre).lower()
    wrapper = pre.getparent()
    if not lang or wrapper is None or wrapper is root:
        return []
    found = []
    for _ in range(2):
        for sib in wrapper:
            if sib is pre or not isinstance(sib.tag, str) or sib.find(".//pre") is not None:
                continue
            text = " ".join(_LABEL_TEXT(sib)).strip().lower()  # (a Copy button beside it)
            if text and len(text) <= 20 and text in (lang, lang.replace("-", " ")):
                found.append(sib)
        pre, wrapper = wrapper, wrapper.getparent()
        if wrapper is None or wrapper is root or len(wrapper.findall(".//pre")) != 1:
            break
    return found


def _toggled(label: Any, inputs: dict[str, Any]) -> Any:
    """The code block a CSS checkbox toggle shows (pdoc: ``label[for] ~ input ~ div``): the
    first sibling after the label's input (or the label) that holds a <pre>."""
    start = inputs.get(label.get("for") or "")
    node = (start if start is not None else label).getnext()
    while node is not None:
        if node.tag == "pre" or node.find(".//pre") is not None:
            return node
        node = node.getnext()
    return None


def _prose(p: Any, least: int = 150) -> bool:
    """A paragraph a person wrote: long enough, and mostly not links."""
    text = "".join(p.itertext())
    return len(text) >= least and _link_len(p) < 0.3 * len(text)


def _climb(el: Any, root: Any, limit: int) -> Any:
    """The widest ancestor below ``root`` that is still a short block (the whole widget)."""
    while True:
        parent = el.getparent()
        if parent is None or parent is root or text_len(parent) > limit or \
                parent.xpath(_HAS_HEADING):
            return el  # (a titled block is an entry, not the widget: TypeDoc's members)
        el = parent


def choose(doc: Any, *, news: bool = False, min_chars: int = 200) -> Choice:
    """The main-content root of ``doc`` and the widgets inside it.

    ``news``: the page says it is an article (``og:type=article``); its rails, galleries,
    captions and bylines are then widgets even inside ``<main>``.
    """
    body = doc.find("body")
    if body is None:
        body = doc
    found = _semantic(doc)
    if found is not None:
        root, kind = found
        news = news or kind in _NEWS_KINDS
        if news:
            root = _named_body(root)
        size = text_len(root)
        if size >= min_chars or text_len(body) < 2 * max(size, 1) + min_chars:
            return Choice(root, kind, False, _widgets(root, news))
    dense, scores = _density_root(body)
    root = _with_title(_named_body(dense), body, scores, news)
    while root is not body and text_len(root) < min_chars and root.getparent() is not None:
        root = root.getparent()  # a short page: the block around it, before the whole body
    if root is not body and text_len(root) >= min_chars:
        title = None if news else _title_block(root, doc)
        return Choice(root, "density", False, _widgets(root, True),
                      [title] if title is not None else [])
    return Choice(body, "body", True, _widgets(body, True))
