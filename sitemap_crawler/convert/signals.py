"""The signals the main-content chooser reads: text and link lengths, class/id words, the
boilerplate and content words, and the tags that carry paragraphs.

Shared by ``content`` (semantic root, widgets) and ``density`` (the text-density pick).
"""

from __future__ import annotations

import re
from typing import Any

from sitemap_crawler.xpath import XPath

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


STRONG_RE = re.compile(rf"(?:^|[\s_-])(?:{_STRONG_WORDS})(?:$|[\s_-])", re.I)


WEAK_RE = re.compile(rf"(?:^|[\s_-])(?:{_WEAK_WORDS})(?:$|[\s_-])", re.I)


# Parts of a news page that its article text does not include: photo galleries, captions and
# credits, bylines and datelines, embedded videos.  Only for news markup and density roots:
# a docs figure caption is content.
_NEWS_WORDS = ("captions?|credits?|gallery|slideshow|carousel|byline|bylines|author|authors|"
               "dateline|timestamp|published|video|videos|video-player|photo|photos|"
               "image-credit|media-credit|lightbox|figcaption|inline-media|headline-list")


NEWS_RE = re.compile(rf"(?:^|[\s_-])(?:{_NEWS_WORDS})(?:$|[\s_-])", re.I)


ANY_WORD_RE = re.compile(rf"(?:^|[\s_-])(?:{_STRONG_WORDS}|{_WEAK_WORDS}|{_NEWS_WORDS})"
                          r"(?:$|[\s_-])", re.I)


CONTENT_RE = re.compile(r"(?:^|[\s_-])(?:content|article|body|main|post|entry|story|text|"
                         r"markdown|typeset|document|prose)(?:$|[\s_-])", re.I)


_WIDGET_LAST_RE = re.compile(rf"[_-](?:{_STRONG_WORDS}|{_WEAK_WORDS})$", re.I)


def content_named(names: str) -> bool:
    """Do the class/id words name content?  A class whose last word is a widget's is that
    widget, whatever comes first ("article-breadCrumb", "post-footer" are a breadcrumb and
    a footer); "article-body", "sidebar-content" or a separate "content" class name content."""
    return any(CONTENT_RE.search(token) and not _WIDGET_LAST_RE.search(token)
               for token in names.split())


PARA_TAGS = ("p", "pre", "td", "blockquote", "dd", "div", "span", "section", "article",
              "font", "center")


INLINE = frozenset({"a", "em", "strong", "b", "i", "u", "code", "span", "font", "small",
                     "sup", "sub", "abbr", "cite", "q", "mark", "time"})


BODY_RE = re.compile(r"(?:^|\s)(?:[\w-]*(?:article|story|entry|post|news)[-_]?(?:body|content|"
                      r"text)|articlebody|body-?text|story|article-?body)(?:$|\s)", re.I)


# (a dropdown's options and a text box's draft are never written either: a sidebar's archive
# menu of 80 months is not 80 lines of text)
_NOT_TEXT = ("script", "style", "noscript", "template", "select", "textarea")


# The length of an element's text, counted by libxml2: 5x faster than joining itertext() in
# Python (0.02 against 0.10 ms for a 37 KB <main>), the same count (code points).
STRLEN = XPath("string-length(string(.))")


STR = XPath("string(.)")


def text_len(el: Any) -> int:
    """Characters of visible text below ``el`` (script/style text not counted)."""
    total = int(STRLEN(el))
    for s in el.iter(_NOT_TEXT):
        total -= int(STRLEN(s))
    return total


def link_len(el: Any) -> int:
    return sum(int(STRLEN(a)) for a in el.iter("a"))


_SLUG_ID_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6", "dt", "section", "span", "a",
                           "li", "p", "code", "table", "figure"})


def hidden_style(el: Any) -> bool:
    """An inline style that hides the element: ``display:none``, or ``visibility:hidden``
    unless it is a panel its trigger opens (an accordion's ``aria-labelledby`` region)."""
    style = el.get("style")
    if not style:
        return False
    style = style.replace(" ", "").lower()
    if "display:none" in style:
        return True
    return "visibility:hidden" in style and el.get("aria-labelledby") is None and \
        el.get("role") not in ("region", "tabpanel")


HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def class_words(el: Any) -> str:
    """Class and id words; an id is skipped where generators make it from the text (headings,
    API terms, sections: a section titled "Share" has id="share")."""
    cls, id_ = el.get("class"), el.get("id")
    if id_ and (el.tag in _SLUG_ID_TAGS or (len(el) and el[0].tag in HEADING_TAGS)):
        id_ = None
    if cls and id_:
        return cls + " " + id_
    return cls or id_ or ""


HAS_HEADING = "boolean(.//h1|.//h2|.//h3|.//h4|.//h5|.//h6)"
