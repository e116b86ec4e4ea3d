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
helpful?", "Last updated ...", "8 min read", "Edit this page", "Version: 3.2"; on pages without
generator markup a tool bar, all print/e-mail/bookmark links: "» Print this article", "Digg |
Del.icio.us", or an empty comment box's prompts, even in a layout table's cell), when they are a
list of in-page ``#`` links (an on-page TOC), or a ``rel=prev/next`` bar.  Blocks holding a
page heading, code or a table, or a large share of the root's text, are never widgets.

A class word is a guess, so it is checked against structure (issue 19): it never removes a
heading, a term, a table's row or cell, or inline text inside a sentence or a line of code;
a named block that holds prose stays unless it is link-dense or looks like a comment thread
(a form, avatars, repeated items).  Widgets found by structure alone: groups of teaser cards
(linked headlines of other pages), source views behind a "View Source" toggle, a code
block's language label, a short box around a "source" link; without generator markup,
link lists without prose (menus), unless they are all the root holds (a shop's listing),
and teasers written as a definition list (linked terms over summaries);
a list of items that each carry a star rating and a buyer's text (customer reviews); the
author's card beside each post of a thread (schema.org ``Person``) but for the name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sitemap_crawler.convert.density import (
    density_root,
    named_body,
    teaser_cards,
    title_block,
    with_title,
)
from sitemap_crawler.convert.shapes import (
    code_language,
    code_lines,
    content_form,
    grid_columns,
    is_admonition,
)
from sitemap_crawler.convert.signals import (
    ANY_WORD_RE,
    HAS_HEADING,
    HEADING_TAGS,
    INLINE,
    NEWS_RE,
    STR,
    STRLEN,
    STRONG_RE,
    WEAK_RE,
    class_words,
    content_named,
    hidden_style,
    link_len,
    text_len,
)
from sitemap_crawler.xpath import XPath

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
# a news page's widget labels, each the whole text of its element ("Advert", "12 Comments",
# "Share this on WhatsApp"); not a heading's or a term's
_NEWS_LABEL_RE = re.compile(
    r"^\s*(?:advert(?:isement)?|(?:\d+\s+)?(?:user\s+)?comments?(?:\s*\(\+?\d*\))?|"
    r"subscribe|share (?:this |it )?(?:on|via|with) [\w .+-]{1,20}|breaking news emails|"
    r"related (?:stories|posts|links|articles|news|coverage|content))\s*:?\s*$", re.I)
# a page's tool bar, the whole text of its box: print, e-mail, bookmark and share links, text
# size buttons, a gallery's "click on thumbnail" prompt ("» Print this article", "Digg |
# Del.icio.us | Sphere It", "Font size: Decrease Increase")
_TOOL = (r"(?:print(?:er[- ]friendly)?(?: this)?(?: article| page| story| version| format)?|"
         r"e-?mail(?: this)?(?: article| page| story)?(?: to a friend)?|"
         r"send (?:this )?to a friend|bookmark(?: this)?(?: page| article| story)?(?: with)?|"
         r"(?:font|text) size(?:[\s:]+(?:decrease|increase|a\+|a-|\+|-))*|"
         r"digg(?: it| this)?|del\.?icio\.?us|facebook|twitter|reddit|stumbleupon|sphere it|"
         r"linkedin|technorati|newsvine|google|yahoo!?|myspace|furl|trackback(?: url)?|"
         r"permalink|click on (?:the )?thumbnails? to view (?:the )?images?|view gallery|"
         r"social bookmark this story|share this (?:article|story|page)? ?on)")
# an empty or closed comment box's prompts ("No comments at the moment.", "Only members of the
# Club can enter comments.", "Add your comments here", "Comments are closed.")
_PROMPT = (r"(?:(?:there (?:are|is) )?(?:currently )?no comments(?: (?:yet|so far|at the moment|"
           r"submitted yet|for this (?:story|article|post)))?|be the first to (?:leave a )?comment|"
           r"comments? (?:are |is )?(?:now )?closed|(?:add|post|write|leave|submit) (?:your own |"
           r"a |your )?comments?(?: here)?|only (?:registered )?members (?:of [\w ]{1,30} )?can "
           r"(?:enter|post|leave|add) comments|(?:please )?(?:log ?in|sign ?in|register)\b"
           r"[^.]{0,60}\bto (?:post|add|leave|enter|write) (?:a )?comments?[^.]{0,40})\.?")
_TOOLS_RE = re.compile(rf"^[\s»›•|>:,·-]*(?:{_TOOL}|{_PROMPT})"
                       rf"(?:[\s»›•|>:,·-]+(?:{_TOOL}|{_PROMPT}))*[\s»›•|>:,·-]*$", re.I)
_KEEP_TAGS = frozenset({"h1", "h2", "pre", "table"})
_FEW_PARAGRAPHS = 3.0  # a density score below this is a tagline or two, not a text
_NEWS_KINDS = frozenset({"article", "articleBody"})
_COMMENT_RE = re.compile(r"comment", re.I)
_COMMENT_ITEMS = ".//*[contains(@class, 'comment') or contains(@id, 'comment')]"
_ITEMS = ".//article|.//li"
_SOURCE_LINKS = frozenset({"source", "[src]", "[source]", "src"})
_SOURCE_TOGGLE_RE = re.compile(r"^(?:view |show )?source(?: code)?(?: in \S+)?$", re.I)
_BYLINE_RE = re.compile(r"byline|author|dateline|published", re.I)
# (descendant::x[...], not .//x[...]: the same nodes without positional predicates, and
# libxml2 walks one axis instead of a child step from every node: 15-20 % faster)
_NAMED_OUTSIDE_CODE = XPath(
    "descendant::*[@class or @id][not(ancestor-or-self::pre)][not(ancestor-or-self::code)]")
# (the cheap length test first: normalize-space() builds a string per text node)
_SHORT_TEXTS_OUTSIDE_CODE = XPath(
    "descendant::text()[string-length() < 200][normalize-space()][not(ancestor::pre)]"
    "[not(ancestor::code)]")
_ITEMPROPS = XPath("/descendant::*/@itemprop")  # (//@itemprop's nodes, ~20 % faster)
_ALL_TEXTS = XPath("descendant::text()", smart_strings=False)


def _widget_texts(root: Any, news: bool) -> list[Any]:
    """``_SHORT_TEXTS_OUTSIDE_CODE(root)`` for the loop in ``_widgets`` that looks only at
    texts matching ``_WIDGET_TEXT_RE`` (or, on news pages, ``_NEWS_LABEL_RE`` or, spaces
    folded, ``_TOOLS_RE``: keep these in step with it); [] when no text below ``root``
    matches any.  Most pages have none, and the plain strings are ~5x cheaper to get than
    the filtered smart ones."""
    for s in _ALL_TEXTS(root):
        # (never the regexes on blanks, as the XPath's normalize-space() keeps them out:
        # their leading \s* backtracks over a long run of whitespace)
        if len(s) < 200 and not s.isspace() and (_WIDGET_TEXT_RE.match(s) or (news and (
                _NEWS_LABEL_RE.match(s) or _TOOLS_RE.match(" ".join(s.split()))))):
            return _SHORT_TEXTS_OUTSIDE_CODE(root)  # type: ignore[no-any-return]
    return []


_LABEL_TEXT = XPath("descendant::text()[not(ancestor::button)][normalize-space()]")
_PREV_NEXT = XPath("descendant::a[@rel='prev' or @rel='next']")
_HAS_HEADING = XPath(HAS_HEADING)  # (compiled once: el.xpath(str) compiles on every call)
_IN_CELL = XPath("boolean(ancestor-or-self::td|ancestor-or-self::th)")
_ROLES = XPath("//@role")


@dataclass
class Choice:
    """The content root, how it was found, and the widget elements inside it to leave out."""

    root: Any
    kind: str  # articleBody | main | main>article | role=main | article | density | body
    whole_body: bool
    widgets: set[Any] = field(default_factory=set)
    before: list[Any] = field(default_factory=list)  # a title block rendered above the root


def _hidden(el: Any) -> bool:
    attrib = el.attrib
    if not attrib:
        return False
    if "hidden" in attrib or attrib.get("aria-hidden", "").strip().lower() == "true":
        return True
    return hidden_style(el)


def _visible(els: Any) -> list[Any]:
    return [e for e in els if not _hidden(e)]


# never a widget by a class word: headings, terms, and a table's parts (Apache's tr.header)
_TERMS = HEADING_TAGS | {"dt", "summary", "caption", "th", "td", "tr", "thead", "tbody",
                          "tfoot"}
_INLINE_MORE = INLINE | {"b", "i", "kbd", "var", "samp", "tt", "label", "dfn"}


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


def _widgets(root: Any, news: bool, story: bool = False) -> set[Any]:
    """Blocks inside the content root that are widgets, by the signals in the module doc.
    ``news``: no generator markup to trust; ``story``: the page says it is one."""
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
        names = class_words(el)
        if not names or not ANY_WORD_RE.search(names):
            continue
        news_word = news and NEWS_RE.search(names) and not _title_caption(el, names)
        if tag in _INLINE_MORE and not news_word and _in_text(el):
            continue  # a word of a sentence, a heading or a line of code (b.menu, span.comment)
        strong = STRONG_RE.search(names) or news_word
        weak = not strong and WEAK_RE.search(names)
        if not (strong or weak) or content_named(names):
            continue
        if el.get("role") == "tablist" or el.find(".//*[@role='tab']") is not None:
            continue  # tab labels: the renderer puts each above its panel
        parent = el.getparent()
        if parent is not None and grid_columns(parent):
            continue  # a cell of a grid table ("table-header col-first")
        size = text_len(el)
        if story and news_word and _GALLERY_RE.search(names) and root_len - size >= 1000 and \
                _slides(el):
            out.add(el)  # a slideshow of other stories inside the story: large, not its text
            continue
        links = link_len(el)
        if strong and size and links / size > 0.5 and size < 0.6 * root_len and \
                not any(True for _ in el.iter("h1", "h2", "pre")):
            out.add(el)  # a navigation table (DocBook's navheader: Prev, Up, Next) is a widget
            continue
        if protected(el, size, 0.6 if strong else 0.4) or \
                (links <= 0.3 * size and _holds_prose(el, names, news)):
            continue
        if weak and _box_header(el):
            continue  # a box's header is its title ("article-boxout__header" > h3)
        if weak and not news and _in_listed_item(el, root):
            continue  # each listed post's date and category line (a blog's index) is data
        if strong or (size and links / size > 0.5) or size < 80:
            out.add(el)
    for lst in root.iter("ul", "ol", "div", "section", "details"):
        if lst is root or lst in out:
            continue
        anchors = lst.findall(".//a[@href]")
        if len(anchors) >= 3 and all(a.get("href", "").startswith("#") for a in anchors):
            size = text_len(lst)
            if size and link_len(lst) / size > 0.8 and not protected(lst, size):
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
    for a in _PREV_NEXT(root):
        out.add(_climb(a, root, 200))
    for s in _widget_texts(root, news):  # (a table's cells are its data)
        if news and not s.is_tail and _TOOLS_RE.match(" ".join(s.split())):
            bar = _tool_bar(s.getparent(), root)
            if bar is not None:
                out.add(bar)  # (and a wider widget around it is still judged below)
        label = news and _NEWS_LABEL_RE.match(s)
        if (label or _WIDGET_TEXT_RE.match(s)) and not _IN_CELL(s.getparent()):
            el = s.getparent()
            if s.is_tail:
                continue
            if el is root or text_len(el) > 160:
                continue
            if label and not _WIDGET_TEXT_RE.match(s) and \
                    (_words(el) != _words(s) or not _alone(el)
                     or (el.tag in _INLINE_MORE and _in_text(el)) or _in_title(el, root)):
                continue  # a label is all its box says, not a word of a sentence or of a
                # signature ("comment?: string", TypeDoc)
            if not news and _in_listed_item(el, root):
                continue  # "5 min read" under each post of a blog's index: the item's data
            start, el = el, _climb(el, root, 160)
            if _in_title(start, el) and not _WIDGET_TEXT_RE.match(" ".join(STR(el).split())):
                continue  # a word of a heading or a term ("fn next(&mut self)"), not a widget
            if not protected(el, text_len(el)):
                out.add(el)
    # a group of three or more teaser cards (linked headlines of other pages: related posts,
    # carousels) that is not most of the page, even inside <main>
    teasers = teaser_cards(root)
    for group in {t.getparent() for t in teasers if t.getparent() is not None}:
        items = [c for c in group if c in teasers]
        if len(items) >= 3 and group is not root and group not in out:
            size = text_len(group)
            if not protected(group, size, 0.4):
                out.add(group)
    out.update(_reply_boxes(root))
    if news:
        out.update(_control_panels(root, root_len))
        out.update(_side_columns(root, teasers))
    if news:  # no generator markup to trust: link lists without prose are menus
        menus = set()
        for el in root.iter("ul", "ol", "div", "section", "table", "aside", "header"):
            if el is root or el in out:
                continue
            anchors = el.findall(".//a")
            if len(anchors) < 3:
                continue
            size = text_len(el)
            if not size or link_len(el) / size <= 0.4 or protected(el, size):
                continue
            if any(_prose(p) for p in el.iter("p")) or _reference(el) or _in_entry(el, root):
                continue
            menus.add(el)
        if not _listing(root, root_len, out, menus):
            out.update(menus)
        out.update(d for d in _teaser_terms(root) if not protected(d, text_len(d)))
    out.update(_rated_lists(root, root_len))
    out.update(_author_cards(root))
    return out


_PEOPLE = XPath(".//*[@itemtype][contains(@itemtype, 'schema.org/Person')]")
_HOLDS_NAME = XPath("boolean(descendant-or-self::*[@itemprop='name' or @itemprop='url'])")


def _author_cards(root: Any) -> list[Any]:
    """The author's card beside each post of a thread (a schema.org ``Person``, three or
    more): the name is the post's, the rest of the card is the forum's (a member title, join
    date, post count, location, reputation and badges).  Not a card without a marked name,
    nor one holding a sentence (a team page's people with their bios)."""
    people = _PEOPLE(root)
    if len(people) < 3:
        return []
    out = []
    for person in people:
        if not _HOLDS_NAME(person) or _LONG_TEXT(person):
            continue
        todo = [person]
        while todo:
            for c in todo.pop():
                if not isinstance(c.tag, str):
                    continue
                if _HOLDS_NAME(c):
                    todo.append(c)  # (the name's box: only what is beside the name goes)
                elif text_len(c):
                    out.append(c)
    return out


_SUMMARY = 60  # characters a teaser's summary holds at least, on average


def _teaser_terms(root: Any) -> list[Any]:
    """Teasers written as a definition list: three or more terms, each all one link to
    another page, each followed by a summary of its story ("B.C. Headlines": ``dt > a``,
    ``dd`` of a sentence or two).  A glossary's terms are not links, a "see also" list's
    descriptions are a few words, a table of contents' are lists of links.  The box around
    it goes too when it adds only a title."""
    out = []
    for dl in root.iter("dl"):
        terms = [c for c in dl if c.tag == "dt"]
        if len(terms) < 3 or dl is root:
            continue
        said = 0
        for dt in terms:
            nxt = dt.getnext()
            size = text_len(dt)
            links = dt.findall(".//a[@href]")
            if nxt is None or nxt.tag != "dd" or not size or len(links) != 1 or \
                    links[0].get("href", "").startswith("#") or \
                    len(" ".join(STR(links[0]).split())) < 0.8 * len(" ".join(STR(dt).split())):
                break
            if nxt.find(".//dl") is not None or nxt.find(".//li") is not None:
                break  # a table of contents: a chapter's sections under its link
            said += _unlinked(nxt)
        else:
            if said >= _SUMMARY * len(terms):
                box, parent = dl, dl.getparent()
                if parent is not None and parent is not root and \
                        text_len(parent) <= text_len(dl) + 60:
                    box = parent  # ("B.C. Headlines" above the list)
                out.append(box)
    return out


# a star rating's label: "Rated 5 out of 5 stars", "5 star review", "4.6/5"
_RATING_RE = re.compile(r"(?:^|\s)(?:rated\s+)?[0-5](?:\.\d+)?\s*(?:out of\s*5(?:\.0)?|/\s*5|"
                        r"stars?)(?:\W|$)", re.I)
_RATING_LABELS = XPath(".//@aria-label[contains(., 'tar') or contains(., '5')] | "
                       ".//@title[contains(., 'tar') or contains(., '5')]")


def _rated_lists(root: Any, root_len: int) -> set[Any]:
    """Customer reviews: three or more items of one kind, each with a star rating (its
    ``aria-label`` or ``title``) and most with written text, with no heading of the page's
    outline among them (a listicle's rated entries are its sections), not most of the root."""
    ratings = [a.getparent() for a in _RATING_LABELS(root) if _RATING_RE.search(a)]
    rated: dict[Any, set[Any]] = {}
    for r in ratings:
        for node in r.iterancestors():
            if node is root:
                break
            parent = node.getparent()
            if parent is None:
                break
            kind = (node.tag, node.get("class"))
            if sum(1 for s in parent if (s.tag, s.get("class")) == kind) >= 3:
                rated.setdefault(parent, set()).add(node)
                break
    out = set()
    for group, items in rated.items():
        if len(items) < 3 or text_len(group) > 0.5 * root_len or \
                any(True for i in items for _ in i.iter("h1", "h2", "h3")):
            continue
        if sum(text_len(i) >= 120 for i in items) >= 0.5 * len(items):
            out.add(group)
    return out


_LISTING_LEFT = 200  # characters: less left beside the link lists, and they are the page


def _listing(root: Any, root_len: int, widgets: set[Any], menus: set[Any]) -> bool:
    """Are the link lists all the root holds (a shop's grid of best sellers, a listing of
    linked items with prices and ratings): would leaving them out leave it empty, when
    without them it holds a page's worth of text?"""
    return bool(menus) and _left(root, root_len, widgets | menus) < _LISTING_LEFT and \
        _left(root, root_len, widgets) >= 2 * _LISTING_LEFT


def _left(root: Any, root_len: int, widgets: set[Any]) -> int:
    """Characters of the root outside the widgets (each widget counted once, not inside
    another)."""
    gone = 0
    for w in widgets:
        node = w.getparent()
        while node is not None and node is not root and node not in widgets:
            node = node.getparent()
        if node is None or node is root:
            gone += text_len(w)
    return root_len - gone


def _side_columns(root: Any, teasers: set[Any]) -> list[Any]:
    """Side columns beside the text column (old table and div layouts with no <main>): down
    the chain of children that each hold most of the unlinked text, every sibling of it that
    is three or more links, mostly (50 %, teaser cards counted as links), and holds under
    half the unlinked text of the column beside it (menus, headline lists, teasers, tag
    clouds, footers of links), even when titled or laid out as tables.  The column holds
    text (200 characters outside links), and a list three times its size is the page (an
    index without prose beside its tagline).  Not a block of the text column's kind (a
    shared class: reference sections of links), a table row, a heading's wrapper, a "See
    also" box, an API signature, code, nor a block with the page's title: an <h1> when the
    root has no other (old sites title their side boxes with <h1>s too)."""
    out: list[Any] = []
    node, node_len = root, _unlinked(root)
    while True:
        kids = [(c, _unlinked(c)) for c in node if isinstance(c.tag, str)]
        if not kids:
            break
        best, best_len = max(kids, key=lambda k: k[1])
        if best_len < max(200, 0.5 * node_len) or best.tag in _TEXT_LEVEL or \
                any(c.tag == "p" and own >= 80 for c, own in kids):
            break  # (beside paragraphs are the text's own blocks: a list of linked sources)
        kind = set((best.get("class") or "").split())
        best_text = text_len(best)
        for c, _ in kids:
            if c is best or c.tag in _NOT_COLUMNS or kind & set((c.get("class") or "").split()):
                continue  # (a paragraph or a row of links beside a block is the text's: a
                # link list; so is a section of the same kind: DocBook's "See also" sect1)
            size = text_len(c)
            linked = _linked(c, teasers) if size >= 50 else 0
            if linked > 0.5 * size and size - linked < 0.5 * best_len and \
                    size <= 3 * best_text and \
                    len(c.findall(".//a")) >= 3 and c.find(".//pre") is None and \
                    not _holds_title(c, root) and not _titles(c, size) and \
                    not is_admonition(c, c.get("class") or "") and not _reference(c):
                out.append(c)
        node, node_len = best, best_len
    return out


def _tool_bar(el: Any, root: Any) -> Any:
    """The box of a tool bar whose text node is in ``el``: the widest short block around it
    whose whole text is tools, or ``el`` itself on a line of its own; None for a word of a
    sentence or a heading ("<b>Print</b> the form and sign it")."""
    if _in_title(el, root) or (el.tag in _INLINE_MORE and _in_text(el) and
                               _words(el.getparent()) != _words(el)):
        return None  # (a link alone in its paragraph is a box of its own)
    cell = next(el.iterancestors("td", "th"), None) if el.tag not in ("td", "th") else el
    if cell is not None and cell.find(".//div") is None and cell.find(".//table") is None and \
            cell.find(".//br") is None:
        return None  # a data table's cell ("Print" beside Ctrl+P); a layout cell holds blocks
    found, node = None, el
    while True:  # the widest box up the chain that is all tools (a layout table of two links)
        if _TOOLS_RE.match(_words(node)) and (node.tag not in _INLINE_MORE or _alone(node)):
            found = node
        parent = node.getparent()
        if parent is None or parent is root or text_len(parent) > 160 or \
                _HAS_HEADING(parent) or parent.find(".//pre") is not None:
            return found
        node = parent


def _reply_boxes(root: Any) -> list[Any]:
    """A reply form (a form with a text box) and the box around it that says nothing else
    ("Leave a Reply", "Cancel reply", "Your email address will not be published"): never
    content.  Not a form that wraps the page's text (old server-framework pages)."""
    out = []
    for form in root.iter("form"):
        if form.find(".//textarea") is None or content_form(form):
            continue
        box, size = form, text_len(form)
        while True:
            parent = box.getparent()
            if parent is None or parent is root or text_len(parent) > size + 150 or \
                    parent.find(".//h1") is not None or \
                    _ENTRIES(parent) > _ENTRIES(box):  # (a comment thread above the form)
                break
            box = parent
        out.append(box)
    return out


_ENTRIES = XPath("count(.//li|.//article|.//p)")
_TEXT_LEVEL = frozenset({"p", "blockquote", "pre", "li", "dd", "font", "span", "center"}) | \
    HEADING_TAGS
_NOT_COLUMNS = _TEXT_LEVEL | {"tr", "tbody", "thead", "tfoot", "dt", "dl"}


def _titles(el: Any, size: int) -> bool:
    """Is ``el`` mostly a heading (a heading's wrapper with its anchor link)?"""
    return any(int(STRLEN(h)) >= 0.5 * size for h in el.iter(HEADING_TAGS))


def _holds_title(el: Any, root: Any) -> bool:
    mine = el.findall(".//h1")
    return bool(mine) and len(root.findall(".//h1")) == len(mine)


def _linked(el: Any, teasers: set[Any]) -> int:
    """Text of links, and of teaser cards (a linked headline's summary is another page's)."""
    total = link_len(el)
    todo = [el]
    while todo:
        for c in todo.pop():
            if c in teasers:
                total += _unlinked(c)
            elif isinstance(c.tag, str):
                todo.append(c)
    return total


def _unlinked(el: Any) -> int:
    return max(text_len(el) - link_len(el), 0)


_CONTROL_ROLES = frozenset({"button", "slider", "menuitem", "menuitemradio", "option",
                            "checkbox", "switch"})
_LONG_TEXT = XPath("boolean(.//text()[string-length(normalize-space()) >= 50]"
                   "[not(ancestor::script)][not(ancestor::style)])")


def _control_panels(root: Any, root_len: int) -> list[Any]:
    """A media player's panels: blocks of five or more controls (buttons, sliders, menu
    items) whose every text is a short label ("Full Screen", "High (HD)", "Arial"), however
    long their lists: the widest such block below the root, when it is not most of it."""
    counts: dict[Any, int] = {}
    for el in root.iter():
        if el.tag == "button" or (isinstance(el.tag, str) and el.get("role") in _CONTROL_ROLES):
            node = el.getparent()
            while node is not None and node is not root:
                counts[node] = counts.get(node, 0) + 1
                node = node.getparent()
    out: list[Any] = []
    for el, n in counts.items():
        if n < 5 or any(a in counts and counts[a] >= 5 and _panel(a, root_len)
                        for a in el.iterancestors() if a is not root):
            continue
        if _panel(el, root_len):
            out.append(el)
    return out


def _panel(el: Any, root_len: int) -> bool:
    size = text_len(el)
    return 0 < size <= 0.4 * root_len and not _LONG_TEXT(el) and \
        el.find(".//h1") is None and el.find(".//pre") is None and el.find(".//table") is None


_GALLERY_RE = re.compile(r"(?:^|[\s_-])(?:gallery|slideshow|carousel)(?:$|[\s_-])", re.I)


def _slides(el: Any) -> bool:
    """Five or more list items each with a heading or a picture: a gallery's slides."""
    for lst in el.iter("ul", "ol"):
        if sum(1 for li in lst if li.tag == "li" and li.xpath(_SLIDE)) >= 5:
            return True
    return False


_SLIDE = "boolean(.//h2|.//h3|.//h4|.//h5|.//h6|.//img)"
_CAPTION_RE = re.compile(r"(?:^|[\s_-])captions?(?:$|[\s_-])", re.I)
_PICTURE_NAME_RE = re.compile(r"image|img|media|figure|picture|pic", re.I)
_MEDIA = ("img", "picture", "video", "figure", "iframe", "svg")


def _title_caption(el: Any, names: str) -> bool:
    """A block named only a caption with no picture beside it titles what follows
    (Haddock's ``p.caption`` "Description", "Fields"), as a photo caption never does."""
    if el.tag in _INLINE_MORE or not _CAPTION_RE.search(names) or \
            NEWS_RE.search(_CAPTION_RE.sub(" ", names)):
        return False
    if _PICTURE_NAME_RE.search(names):
        return False
    box = el
    for _ in range(2):  # a picture beside it, or beside the box it sits in
        box = box.getparent() if box.getparent() is not None else box
    return next(box.iter(*_MEDIA), None) is None


_SIGNATURE_RE = re.compile(r"signature|(?:^|[\s_-])sig(?:$|[\s_-])", re.I)


# an anchor that names an entry: an id or name, text, and no href (a menu's anchors link)
_DEFINED = XPath(".//a[not(@href)][@id or @name][normalize-space()]")


_OPENS_WITH_DEFINITION = XPath("./*[1]//a[not(@href)][@id or @name][normalize-space()]")


def _in_entry(el: Any, root: Any) -> bool:
    """Is ``el`` part of an API entry that opens by defining its name (Haddock's instance
    "Methods" under ``div.top > p.src > a.def``)?  Its signatures link every type."""
    for node in el.iterancestors():
        if node is root:
            return False
        if _OPENS_WITH_DEFINITION(node):
            return True
    return False


def _reference(el: Any) -> bool:
    """An API entry, not a menu: a signature, or a heading with an anchor id whose text is
    not a link (TypeDoc's member sections, whose types are links)."""
    names = class_words(el)
    if names and _SIGNATURE_RE.search(names):
        return True
    if _DEFINED(el):
        return True  # a name defined here (Haddock's <a id="v:unlit" class="def">), not a link
    for h in el.iter("h2", "h3", "h4", "h5", "h6"):
        if h.get("id") and int(STRLEN(h)) > link_len(h):
            return True
    return False


def _in_listed_item(el: Any, root: Any) -> bool:
    """Is ``el`` inside one of three or more sibling ``<article>``s of one kind (the posts of
    a listing: MkDocs Material's article.md-post)?"""
    for node in el.iterancestors():
        if node is root:
            return False
        if node.tag == "article":  # (siblings that share a class: WordPress adds post-12)
            parent = node.getparent()
            kinds = set((node.get("class") or "").split())
            return parent is not None and sum(
                1 for c in parent if c.tag == "article" and
                (kinds & set((c.get("class") or "").split()) if kinds else not c.get("class"))
            ) >= 3
    return False


def _words(node: Any) -> str:
    return " ".join((node if isinstance(node, str) else STR(node)).split())


def _alone(el: Any) -> bool:
    """Is ``el`` on a line of its own: no text or inline element right before or after it?"""
    prev, nxt = el.getprevious(), el.getnext()
    before = prev.tail if prev is not None else el.getparent().text
    return not (el.tail or "").strip() and not (before or "").strip() and \
        (prev is None or prev.tag not in _INLINE_MORE) and \
        (nxt is None or nxt.tag not in _INLINE_MORE)


def _in_title(start: Any, top: Any) -> bool:
    """Is ``start`` inside a heading or a term at or below ``top``?"""
    node = start
    while node is not None:
        if node.tag in HEADING_TAGS or node.tag == "dt":
            return True
        if node is top:
            return False
        node = node.getparent()
    return False


def _box_header(el: Any) -> bool:
    """Is ``el`` the title of the block it opens: a heading that is text, not a link (a
    site's linked logo), with the box's text after it (a widget holds its own text)?"""
    after = 0
    for s in el.itersiblings():  # (no text_len is negative: stop at 100, not at the end)
        after += text_len(s)
        if after >= 100:
            break
    else:
        return False
    for h in el.iter("h1", "h2", "h3", "h4", "h5", "h6"):
        size = int(STRLEN(h))
        if size and link_len(h) < 0.5 * size:
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
                    or len(el.xpath(_ITEMS)) >= 2 or _COMMENT_RE.search(STR(el))) \
            and int(STRLEN(el)) >= 20  # ("Comments are closed" speaks of comments)
    paras = [p for p in el.iter("p") if _prose(p, 80)]
    if news and NEWS_RE.search(names):  # a story in a byline box, not a gallery's captions
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
    return len(text) >= least and link_len(p) < 0.3 * len(text)


def _climb(el: Any, root: Any, limit: int) -> Any:
    """The widest ancestor below ``root`` that is still a short block (the whole widget)."""
    while True:
        parent = el.getparent()
        if parent is None or parent is root or text_len(parent) > limit or \
                _HAS_HEADING(parent):
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
            root = named_body(root)
        size = text_len(root)
        if size >= min_chars or text_len(body) < 2 * max(size, 1) + min_chars:
            return Choice(root, kind, False, _widgets(root, news, news))
    dense, scores = density_root(body)
    root = with_title(named_body(dense), body, scores, news)
    while root is not body and text_len(root) < min_chars and root.getparent() is not None:
        root = root.getparent()  # a short page: the block around it, before the whole body
    if found is None and scores.get(body, 0.0) < _FEW_PARAGRAPHS and \
            text_len(root) < 0.25 * text_len(body):
        # no prose to go by (an index that is one long list): not its tagline.  Not where
        # the page names its content (a short <main> of a section index, beside a sidebar
        # of hundreds of links: the whole body would lose the index's list as navigation)
        root = body
    if root is not body and text_len(root) >= min_chars:
        title = None if news else title_block(root, doc)
        return Choice(root, "density", False, _widgets(root, True, news),
                      [title] if title is not None else [])
    return Choice(body, "body", True, _widgets(body, True, news))
