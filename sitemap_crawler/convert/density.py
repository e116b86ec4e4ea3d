"""The main-content element of a page without generator markup, by text density.

Every element whose own text is a paragraph scores for its ancestors (commas, length, few
links; summaries under linked headlines count a fifth: teasers of other pages), and the root
is the deepest element holding 75 % of the score.  It does not stop inside one of several
sibling sections of one kind (DocBook's refsect1s) nor inside a data table's rows, and the
page's title block above it joins it.  Where the score is split between columns, the one
whose text is a block of paragraphs beside columns of fragments (blurbs) is the text.
Chrome (header/nav/aside, chrome-named blocks, a site's tagline) does not score; a chrome
block as large as half the page is its wrapper unless a text column sits beside it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from sitemap_crawler.convert.render import BOILERPLATE
from sitemap_crawler.convert.signals import (
    BODY_RE,
    HEADING_TAGS,
    INLINE,
    PARA_TAGS,
    STR,
    STRLEN,
    STRONG_RE,
    class_words,
    content_named,
    link_len,
    text_len,
)
from sitemap_crawler.xpath import XPath


def _p_text(el: Any) -> int:
    return sum(int(STRLEN(p)) for p in el.iter("p"))


def named_body(root: Any) -> Any:
    """An element named like an article body (``article-body``, ``entry-content``...) inside
    ``root`` that holds most of its paragraphs: news templates put rails and teasers beside
    it inside the same ``<article>``."""
    total = _p_text(root)
    if not total:
        return root
    for el in root.iter("div", "section", "article"):
        names = class_words(el)
        if el is not root and names and BODY_RE.search(names) and \
                _p_text(el) >= 0.6 * total:
            return el
    return root


def _boiler_region(el: Any, cache: dict[Any, bool], wrapper: int) -> bool:
    """Is ``el`` (or an ancestor) header/nav/footer/aside or a boilerplate-named region?
    One holding ``wrapper`` characters or more is the page's wrapper, not chrome: a header
    left unclosed, or a ``div.header-search`` around the whole page, holds the text too."""
    chain = []
    node = el
    result = False
    while node is not None:
        if node in cache:
            result = cache[node]
            break
        chain.append(node)
        tag = node.tag
        names = class_words(node)
        if (tag in BOILERPLATE or node.get("role") in ("navigation", "banner", "contentinfo",
                                                       "complementary", "search")
                or (names and STRONG_RE.search(names) and not content_named(names))) \
                and (text_len(node) < wrapper or _beside_text(node)):
            result = True
            break
        node = node.getparent()
    for n in chain:
        cache[n] = result
    return result


def _tagline(p: Any) -> bool:
    """Is ``p`` a site's tagline: a short block right after the site's name, a link to the
    front page, the two alone in their box (``div#sitetitle > div.title > a``, then
    ``div.description``)?  A header's tagline is not the page's text."""
    prev = p.getprevious()
    while prev is not None and not isinstance(prev.tag, str):
        prev = prev.getprevious()
    if prev is None:
        return False
    name = text_len(prev)  # (cheap tests first: this runs for every paragraph)
    if not name or name > 100:
        return False
    links = prev.findall(".//a[@href]") if prev.tag != "a" else [prev]
    if len(links) != 1 or link_len(prev) < 0.8 * name or not _front_page(links[0]):
        return False
    size, parent = text_len(p), p.getparent()
    return size <= 400 and parent is not None and text_len(parent) <= size + name + 20


def _front_page(a: Any) -> bool:
    """Does link ``a`` lead to the site's front page (the site's name, its logo)?"""
    href = a.get("href", "").strip()
    return not href.startswith("#") and urlsplit(href).path in ("", "/")


def _beside_text(el: Any) -> bool:
    """Is there a text column beside ``el`` (a sibling with 200 characters outside links,
    and a quarter of ``el``'s)?  Then ``el`` is a side column however long (a blogger's
    profile beside a short post), not a wrapper around the page (a "sidebar-container"
    around the post and its TOC, beside a short list of recent posts)."""
    least = max(200, 0.25 * (text_len(el) - link_len(el)))
    return any(_text_column(s, least) for s in el.itersiblings(preceding=True)) or \
        any(_text_column(s, least) for s in el.itersiblings())


def _text_column(el: Any, least: float) -> bool:
    return isinstance(el.tag, str) and el.tag not in BOILERPLATE and \
        text_len(el) - link_len(el) >= least


def _own_text(el: Any) -> list[tuple[str, int]]:
    """The paragraphs an element holds itself, with its inline children (a ``<br>`` ends one
    once it has 25 characters), each with how much of it is links."""
    paras: list[tuple[str, int]] = []
    parts = [el.text or ""]
    links = 0
    for c in el:
        tag = c.tag
        if tag == "br" and parts:  # a story written as lines split by <br>: one paragraph each
            text = " ".join("".join(parts).split())
            if len(text) >= 25:
                paras.append((text, links))
                parts, links = [], 0
        elif tag in INLINE:
            t = "".join(c.itertext())
            parts.append(t)
            if tag == "a":
                links += len(t)
        if c.tail:
            parts.append(c.tail)
    text = " ".join("".join(parts).split())
    if text or not paras:
        paras.append((text, links))
    return paras


def density_root(body: Any) -> tuple[Any, dict[Any, float]]:
    """The deepest element holding 75 % of the text score (readability-like): every element
    whose own text is a paragraph (25+ characters) scores for itself and its ancestors."""
    scores: dict[Any, float] = {}
    cache: dict[Any, bool] = {}
    teasers = teaser_cards(body)
    if not _several(teasers):
        teasers = set()  # one post under a linked title (its permalink) is the page's text
    in_links = {d for a in body.iter("a") for d in a.iterdescendants()}
    wrapper = max(text_len(body) // 2, 1)
    for p in body.iter(PARA_TAGS):
        if p in in_links:
            continue  # a summary that is all one link (a teaser card): not this page's text
        score = sum((1 + text.count(",") + min(len(text) / 100, 3)) *
                    max(0.0, 1 - links / len(text)) ** 2
                    for text, links in _own_text(p) if len(text) >= 25)
        if not score or _boiler_region(p, cache, wrapper) or _tagline(p):
            continue
        scores[p] = score
        parent = p.getparent()
        if parent in teasers or (parent is not None and parent.getparent() in teasers):
            scores[p] *= 0.2  # a summary under a linked headline: a teaser of another page
    paras = dict(scores)  # each paragraph's own score, before it counts for its ancestors
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
        if best is not None and scores.get(best, 0) < 0.75 * total and \
                not _one_of_sections(best, scores):
            column = _text_column_among(node, scores, paras)
            if column is not None:  # the text column beside columns of blurbs: the page now
                node, total = column, scores[column]
                continue
        if best is None or scores.get(best, 0) < 0.75 * total or \
                _one_of_sections(best, scores):
            if node.tag in _TABLE_PARTS or node.find(".//table") is not None:
                node = _around_table(node, body, scores)
            return node, scores
        node = best


def _text_column_among(node: Any, scores: dict[Any, float],
                       own: dict[Any, float]) -> Any:
    """The child of ``node`` that is its text column, when the score is split between
    columns: the one whose text is a block of paragraphs side by side (60 % of its score or
    more in one element's own paragraphs), while every other child scoring is fragments
    (no block of 40 % of its score: a sidebar's blurbs, each in its own box).  Or None."""
    kids = [c for c in node if isinstance(c.tag, str) and scores.get(c)]
    if len(kids) < 2:
        return None
    found = None
    for c in kids:
        dense = max((own.get(e, 0.0) + sum(own.get(k, 0.0) for k in e)
                     for e in c.iter() if e in scores), default=0.0)
        if dense >= 0.6 * scores[c]:
            if found is not None:
                return None  # two blocks of text: sections of one text, not a column
            found = c
        elif dense >= 0.4 * scores[c]:
            return None
    return found if found is not None and scores[found] >= 0.4 * scores[node] else None


_CARD = 600  # characters at most in one teaser card
_BLANK = XPath("not(normalize-space())")
_KICKER = XPath("*[1][self::strong or self::span or self::em or self::b][not(.//a)]"
                "[following-sibling::*[1][self::a]]")


def _linked_headline(h: Any) -> bool:
    """A headline that is all link, or a link after a short kicker ("Editorial", "Review"),
    or only an empty link (a script fills its title in)."""
    size = int(STRLEN(h))
    if size and link_len(h) >= 0.8 * size:
        return True
    if size and _KICKER(h):
        size = len(" ".join(STR(h).split()))
        links = sum(len(" ".join(STR(a).split())) for a in h.iter("a"))
        return links >= 0.5 * size and size - links <= 25
    return bool(_BLANK(h)) and h.find(".//a[@href]") is not None


def _several(cards: set[Any]) -> bool:
    """Two or more cards, neither inside the other."""
    tops = 0
    for c in cards:
        if not any(a in cards for a in c.iterancestors()):
            tops += 1
            if tops >= 2:
                return True
    return False


def teaser_cards(body: Any) -> set[Any]:
    """Blocks headed by a linked headline: teaser cards of other pages, whose summaries are
    not this page's text.  A card is short, but in a list of three or more items of one
    class, each item with a linked headline is a card at up to twice that length."""
    out = set()
    for h in body.iter("h2", "h3", "h4", "h5", "h6"):
        if _linked_headline(h):
            parent = h.getparent()  # a card is short: a post under a linked title is not
            if parent is not None and text_len(parent) <= _CARD:
                out.add(parent)
                grand = parent.getparent()
                if len(parent) <= 2 and grand is not None and text_len(grand) <= _CARD:
                    out.add(grand)
    groups = set()
    for card in list(out):
        for item in (card, card.getparent()):
            group = item.getparent() if item is not None else None
            if group is None or group in groups:
                break
            same = [s for s in group if s.tag == item.tag and s.get("class") == item.get("class")]
            if len(same) >= 3:
                groups.add(group)
                out.update(s for s in same if text_len(s) <= 2 * _CARD and
                           any(_linked_headline(h) for h in s.iter(HEADING_TAGS - {"h1"})))
                break
    return out


def with_title(root: Any, body: Any, scores: dict[Any, float], news: bool) -> Any:
    """The title above the text block belongs to it: the parent holding the page's one <h1>,
    or on a page that is not a news story the nearest ancestor (four levels at most) holding
    it when the block is most of that ancestor's text (TypeDoc: the h1 sits above a column
    of member groups).  A story's headline and standfirst are not its body, and a site's
    logo in an <h1> is not the page's title."""
    if root is body or root.find(".//h1") is not None:
        return root
    parent = root.getparent()
    if news:
        return parent if parent is not None and parent is not body and \
            len(_titles(parent)) == 1 else root
    node, size = root, scores.get(root, 0.0)
    for _ in range(4):
        node = node.getparent()
        if node is body and len(body.findall("h1")) == 1 == len(_titles(body)):
            # a page written straight into <body> (old hand-made sites): the lists and
            # sections beside its text block under the same title are the page too
            return body if size >= 0.6 * scores.get(body, 0.0) else root
        if node is None or node is body:
            return root
        h1s = _titles(node)
        if len(h1s) > 1:
            return root
        if h1s:
            return node if size >= 0.6 * scores.get(node, 0.0) else root
    return root


def _titles(node: Any) -> list[Any]:
    """The <h1>s below ``node`` that title a page, not a site's logo (an image, or a link to
    the front page: ``<h1><a href="/"><img alt="The Blog Herald"></a></h1>``)."""
    return [h for h in node.iter("h1") if not _logo(h)]


def _logo(h1: Any) -> bool:
    """An <h1> with no text (an image), or all one link to the front page."""
    text = " ".join(STR(h1).split())
    if not text:
        return True
    links = h1.findall(".//a[@href]")
    if len(links) != 1:
        return False
    return len(" ".join(STR(links[0]).split())) >= 0.8 * len(text) and _front_page(links[0])


def title_block(root: Any, doc: Any) -> Any:
    """The small block shortly before ``root`` that holds the page's title, its one <h1> or
    else its first <h2> (AsciiDoc's div#header with the h1 and NAME line beside div#content;
    DocBook's div.titlepage with the chapter's h2 before its sections), or None."""
    h1s = _titles(doc)
    if len(h1s) > 1 or root.find(".//h1") is not None:
        return None
    title = h1s[0] if h1s else doc.find(".//h2")  # (DocBook titles chapters with an h2)
    if title is None or title in root.iterdescendants():
        return None
    node = root
    for _ in range(2):
        prev = node.getprevious()
        for _ in range(3):  # (a TOC may sit between the title and the text)
            while prev is not None and not isinstance(prev.tag, str):
                prev = prev.getprevious()
            if prev is None:
                break
            if prev is title or title in prev.iterdescendants():
                size = text_len(prev)
                small = size <= max(300, 0.25 * text_len(root))
                return prev if small and link_len(prev) <= 0.5 * size else None
            prev = prev.getprevious()
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
    others = [scores.get(s, 0.0) for s in parent
              if s is not el and s.tag == el.tag and s.get("class") == cls and _titled(s)]
    # (a reference page's long "Functions" beside short "Includes" and "Description": 3+)
    return sum(others) >= 0.15 * scores.get(el, 0.0) or sum(o > 0 for o in others) >= 2


def _titled(el: Any) -> bool:
    # (gtk-doc opens each section with an empty <a name=...> target before its heading)
    first = next((c for c in el if isinstance(c.tag, str)
                  and not (c.tag == "a" and not int(STRLEN(c)))), None)
    if first is None:
        return False
    if first.tag in HEADING_TAGS:
        return True  # DocBook puts the heading one level down: div.titlepage > div > h2
    return first.find(".//h1") is not None or first.find(".//h2") is not None or \
        first.find(".//h3") is not None


_HAS_TITLE = "boolean(.//h1|.//h2|.//h3)"
