"""The second bench site shape ("long"): long prose pages under deep, heavy navigation.

Why: the crawl ratio against Scrapy + markdownify was measured on one shape only (the demo's
docs pages: 10-30 KB, a 50-link sidebar, a Python code block or two per page).  Issue 13 saw
2.8-4.0x on "another site of the same kind", so this shape differs where a converter's and a
crawler's costs move: pages 2-4x longer in prose (headings h2-h4, paragraphs, lists and
nested lists, tables, admonitions, definition lists, rarely a code block), URLs four levels
deep (``/docs/<section>/<sub>/<topic>/<page>.html``) with an index page at every level, and
large chrome: a mega-menu header (every section and subsection, with blurbs), a nested
sidebar of the whole current section (~300-500 links), six-level breadcrumbs, an "On this
page" TOC of every heading, and a four-column footer.

Deterministic: same ``(pages, seed)``, same bytes.  Pages are :class:`demo.site.Page`, so
bench/site.py builds, mutates and writes sitemaps for this shape as for the docs shape.
Imports only the standard library and ``sitemap_crawler.demo.site`` (for ``Page``).
"""

from __future__ import annotations

import html
import random
import re
from datetime import UTC, datetime, timedelta

from sitemap_crawler.demo.site import HTML, Page

SITE_NAME = "Northwind Platform Handbook"
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
SECTIONS = ("platform", "data", "security", "operations", "integrations", "billing", "sdk",
            "administration")
_SUBS = ("overview", "concepts", "setup", "configuration", "workflows", "limits",
         "troubleshooting", "migration")
_TOPICS = ("basics", "advanced", "policies", "examples", "reference", "faq")
_WORDS = ("account", "workspace", "project", "policy", "region", "quota", "audit log",
          "pipeline", "dataset", "schema", "role", "permission", "invoice", "subscription",
          "webhook", "connector", "snapshot", "backup", "replica", "cluster", "tenant",
          "gateway", "certificate", "secret", "token", "endpoint", "environment", "release",
          "dashboard", "alert", "retention window", "export job", "import job", "usage report")
_VERBS = ("configure", "review", "rotate", "approve", "archive", "restore", "monitor",
          "provision", "migrate", "schedule", "export", "enforce", "audit", "reconcile")
_ADJS = ("regional", "shared", "dedicated", "temporary", "managed", "read-only", "default",
         "scheduled", "encrypted", "external", "inherited", "pending", "suspended", "primary")
_PEOPLE = ("administrators", "billing owners", "project members", "auditors", "operators",
           "developers", "support engineers", "data stewards")
_TEMPLATES = (
    "When {people} {verb} a {adj} {w1}, the {w2} keeps a record of every change for the "
    "length of the {w3}.",
    "A {w1} belongs to exactly one {w2}, and moving it to another {w2} requires {people} to "
    "{verb} the {adj} {w3} first.",
    "Most teams {verb} the {w1} once per quarter; larger organisations do it every month, "
    "after the {w2} has been reviewed by {people}.",
    "If the {w1} is {adj}, requests from the {w2} are queued until the {w3} has been "
    "confirmed, which usually takes a few minutes.",
    "The {w1} settings page lists each {w2} with its owner, its last change and whether it "
    "is {adj}.",
    "You cannot {verb} a {w1} that is still referenced by a {w2}; remove the reference, wait "
    "for the {w3} to refresh, then try again.",
    "For compliance reasons, {people} may {verb} the {w1} but not the {adj} {w2}, which only "
    "the account owner can change.",
    "Changes to the {w1} take effect at the next {w2} boundary, so plan them together with "
    "the {adj} {w3}.",
    "See <a href=\"{link}\">{link_title}</a> for the steps that {people} follow to {verb} a "
    "{adj} {w1}.",
    "The {w1} is billed per {w2}: a {adj} {w3} counts once, however many {people} use it.",
    "Use <code>{ident}</code> when you {verb} the {w1} from the command line.",
    "Older {w1}s created before the {w2} existed are shown as {adj} until {people} "
    "{verb} them.",
)
_LABELS = ("Note", "Important", "Tip", "Caution")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "page"


def _title(text: str) -> str:
    return text[:1].upper() + text[1:]


class LongSite:
    """The long-page site: ``pages`` URLs in all, home, section, subsection and topic indexes
    (~290) and articles; ``pages``, ``page(path)`` and ``render_page(page)`` as
    ``demo.site.DemoSite`` has them."""

    def __init__(self, pages: int, seed: int = 7) -> None:
        self.seed = seed
        rng = random.Random(f"{seed}:long:tree")
        # the tree: section -> subsections -> topics (the numbers vary by section)
        self.tree: dict[str, dict[str, list[str]]] = {}
        for s in SECTIONS:
            subs = rng.sample(_SUBS, rng.randint(5, 8))
            self.tree[s] = {sub: rng.sample(_TOPICS, rng.randint(3, 6)) for sub in subs}
        created = random.Random(f"{seed}:long:created")
        self._pages: list[Page] = []
        self._by_path: dict[str, Page] = {}
        self.children: dict[str, list[Page]] = {}  # topic path prefix -> its articles

        def add(path: str, title: str, section: str) -> Page:
            p = Page(id=len(self._pages), path=path, title=title, section=section, kind=HTML,
                     version=0, lastmod=EPOCH - timedelta(
                         seconds=created.randint(3600, 400 * 86400)))
            self._pages.append(p)
            self._by_path[path] = p
            return p

        add("/", SITE_NAME, "")
        topics: list[tuple[str, str, str]] = []
        for s, subs in self.tree.items():
            add(f"/docs/{s}/", _title(s), s)
            for sub, tops in subs.items():
                add(f"/docs/{s}/{sub}/", f"{_title(s)}: {sub}", s)
                for t in tops:
                    add(f"/docs/{s}/{sub}/{t}/", f"{_title(s)} {sub}: {t}", s)
                    topics.append((s, sub, t))
        trng = random.Random(f"{seed}:long:titles")
        for i in range(max(len(topics), pages - len(self._pages))):  # ``pages`` URLs in all
            s, sub, t = topics[i % len(topics)]
            title = (f"{trng.choice(_VERBS).capitalize()} a {trng.choice(_ADJS)} "
                     f"{trng.choice(_WORDS)}")
            base = f"/docs/{s}/{sub}/{t}/{_slug(title)}"
            path, n = base + ".html", 2
            while path in self._by_path:
                path, n = f"{base}-{n}.html", n + 1
            page = add(path, title, s)
            self.children.setdefault(f"/docs/{s}/{sub}/{t}/", []).append(page)
        self._sidebar: dict[str, str] = {}
        self._header = self._mega_menu()
        self._footer = self._footer_html()

    # -- the DemoSite interface bench/site.py uses --------------------------------------------
    @property
    def pages(self) -> list[Page]:
        return list(self._pages)

    def page(self, path: str) -> Page | None:
        return self._by_path.get(path)

    def render_page(self, page: Page) -> bytes:
        return self._render(page).encode("utf-8")

    # -- chrome ---------------------------------------------------------------------------------
    def _mega_menu(self) -> str:
        rng = random.Random(f"{self.seed}:long:menu")
        out = ['<header class="site-header"><a class="brand" href="/">' + SITE_NAME + "</a>",
               '<nav class="mega-menu" aria-label="Main"><ul class="menu-level-1">']
        for s, subs in self.tree.items():
            out.append(f'<li class="menu-item has-children"><a href="/docs/{s}/">'
                       f"{_title(s)}</a><div class=\"menu-panel\"><ul class=\"menu-level-2\">")
            for sub in subs:
                blurb = (f"{_title(rng.choice(_VERBS))} {rng.choice(_ADJS)} "
                         f"{rng.choice(_WORDS)}s and {rng.choice(_WORDS)}s")
                out.append(f'<li><a href="/docs/{s}/{sub}/"><span class="menu-title">'
                           f'{_title(sub)}</span><span class="menu-blurb">{blurb}</span></a>'
                           "</li>")
            out.append("</ul></div></li>")
        out.append('</ul></nav><form class="search" role="search" action="/search">'
                   '<input type="search" name="q" placeholder="Search the handbook">'
                   '<button type="submit">Search</button></form></header>')
        return "\n".join(out)

    def _footer_html(self) -> str:
        cols = []
        for s in SECTIONS[:4]:
            links = "".join(f'<li><a href="/docs/{s}/{sub}/">{_title(sub)}</a></li>'
                            for sub in self.tree[s])
            cols.append(f'<div class="footer-col"><h4>{_title(s)}</h4><ul>{links}</ul></div>')
        return ('<footer class="site-footer"><div class="footer-cols">' + "".join(cols)
                + '</div><p class="legal">© 2024 Northwind Ltd. · <a href="/privacy.html">'
                "Privacy</a> · <a href=\"/terms.html\">Terms</a> · Status: all systems "
                "operational</p></footer>")

    def sidebar(self, page: Page) -> str:
        """The whole current section as a nested list; the current topic's articles open."""
        parts = page.path.strip("/").split("/")
        section = page.section or SECTIONS[0]
        topic_key = "/" + "/".join(parts[:4]) + "/" if len(parts) >= 4 else ""
        key = f"{section}|{topic_key}"
        cached = self._sidebar.get(key)
        if cached is None:
            out = [f'<nav class="sidebar" aria-label="{_title(section)} navigation">'
                   f'<p class="sidebar-title">{_title(section)}</p><ul class="nav-level-1">']
            for sub, tops in self.tree[section].items():
                out.append(f'<li class="nav-group"><a href="/docs/{section}/{sub}/">'
                           f"{_title(sub)}</a><ul class=\"nav-level-2\">")
                for t in tops:
                    tk = f"/docs/{section}/{sub}/{t}/"
                    kids = self.children.get(tk, [])
                    shown = kids if tk == topic_key else kids[:4]
                    out.append(f'<li class="nav-topic"><a href="{tk}">{_title(t)}</a>'
                               '<ul class="nav-level-3">')
                    out += [f'<li><a href="{k.path}">{html.escape(k.title)}</a></li>'
                            for k in shown]
                    out.append("</ul></li>")
                out.append("</ul></li>")
            out.append("</ul></nav>")
            cached = "\n".join(out)
            if len(self._sidebar) < 2048:
                self._sidebar[key] = cached
        here = f'<a href="{page.path}">'
        return cached.replace(here, f'<a href="{page.path}" aria-current="page" '
                                    'class="active">', 1)

    def breadcrumbs(self, page: Page) -> str:
        parts = page.path.strip("/").split("/")
        crumbs = ['<a href="/">Home</a>', "Docs"]  # (/docs/ itself is not a page)
        for i in range(2, len(parts)):
            href = "/" + "/".join(parts[:i]) + "/"
            crumbs.append(f'<a href="{href}">{_title(parts[i - 1])}</a>')
        return ('<nav class="breadcrumbs" aria-label="Breadcrumb"><ol>'
                + "".join(f"<li>{c}</li>" for c in crumbs)
                + f"<li>{html.escape(page.title)}</li></ol></nav>")

    # -- the article ----------------------------------------------------------------------------
    def _sentence(self, rng: random.Random) -> str:
        link = rng.choice(self._pages)
        w = rng.sample(_WORDS, 3)
        return rng.choice(_TEMPLATES).format(
            people=rng.choice(_PEOPLE), verb=rng.choice(_VERBS), adj=rng.choice(_ADJS),
            w1=w[0], w2=w[1], w3=w[2], link=link.path, link_title=html.escape(link.title),
            ident=f"nw {rng.choice(_VERBS)} --{_slug(rng.choice(_WORDS))}")

    def _para(self, rng: random.Random) -> str:
        return "<p>" + " ".join(self._sentence(rng) for _ in range(rng.randint(3, 8))) + "</p>"

    def _list(self, rng: random.Random, depth: int = 0) -> str:
        tag = rng.choice(("ul", "ul", "ol"))
        items = []
        for _ in range(rng.randint(3, 7)):
            inner = self._sentence(rng)
            if depth == 0 and rng.random() < 0.2:
                inner += self._list(rng, 1)
            items.append(f"<li>{inner}</li>")
        return f"<{tag}>{''.join(items)}</{tag}>"

    def _table(self, rng: random.Random) -> str:
        cols = ("Setting", "Applies to", "Default", "Notes")
        rows = []
        for _ in range(rng.randint(3, 9)):
            rows.append(f"<tr><td>{_title(rng.choice(_WORDS))} {rng.choice(_ADJS)}</td>"
                        f"<td>{_title(rng.choice(_PEOPLE))}</td>"
                        f"<td>{rng.choice(('Off', 'On', '30 days', '1 hour', 'Inherited'))}"
                        f"</td><td>{self._sentence(rng)}</td></tr>")
        head = "".join(f"<th>{c}</th>" for c in cols)
        return (f"<table class=\"data-table\"><thead><tr>{head}</tr></thead><tbody>"
                + "".join(rows) + "</tbody></table>")

    def _admonition(self, rng: random.Random) -> str:
        label = rng.choice(_LABELS)
        return (f'<div class="callout callout-{label.lower()}"><p class="callout-title">'
                f"{label}</p><p>{self._sentence(rng)} {self._sentence(rng)}</p></div>")

    def _deflist(self, rng: random.Random) -> str:
        items = "".join(f"<dt>{_title(rng.choice(_WORDS))}</dt><dd>{self._sentence(rng)}</dd>"
                        for _ in range(rng.randint(3, 6)))
        return f"<dl>{items}</dl>"

    def _code(self, rng: random.Random) -> str:
        lines = [f"nw login --workspace {_slug(rng.choice(_WORDS))}",
                 f"nw {rng.choice(_VERBS)} {_slug(rng.choice(_WORDS))} \\",
                 f"  --region {rng.choice(('eu-west', 'us-east', 'ap-south'))} \\",
                 f"  --retention {rng.randint(7, 400)}d"]
        return ('<pre><code class="language-shell">' + html.escape("\n".join(lines))
                + "</code></pre>")

    def _article(self, page: Page, rng: random.Random,
                 budget: int) -> tuple[str, list[tuple[int, str, str]]]:
        parts = [f"<h1>{html.escape(page.title)}</h1>",
                 f'<p class="lead">{self._sentence(rng)} {self._sentence(rng)}</p>']
        toc: list[tuple[int, str, str]] = []
        size, n = 0, 0
        code_left = rng.choice((0, 0, 1, 1, 2))  # few code blocks
        while size < budget:
            r = rng.random()
            if r < 0.16:
                level = 2 if rng.random() < 0.6 else rng.choice((3, 3, 4))
                text = f"{_title(rng.choice(_VERBS))} the {rng.choice(_ADJS)} {rng.choice(_WORDS)}"
                n += 1
                anchor = f"{_slug(text)}-{n}"
                toc.append((level, anchor, text))
                block = f'<h{level} id="{anchor}">{text}</h{level}>'
            elif r < 0.62:
                block = self._para(rng)
            elif r < 0.76:
                block = self._list(rng)
            elif r < 0.84:
                block = self._table(rng)
            elif r < 0.91:
                block = self._admonition(rng)
            elif r < 0.97 or not code_left:
                block = self._deflist(rng)
            else:
                code_left -= 1
                block = self._code(rng)
            parts.append(block)
            size += len(block) + 1
        return "\n".join(parts), toc

    def _index_article(self, page: Page) -> str:
        prefix = page.path
        if page.path == "/":
            items = [(f"/docs/{s}/", _title(s)) for s in SECTIONS]
        else:
            items = sorted((p.path, p.title) for p in self._pages if p.path != prefix
                           and p.path.startswith(prefix)
                           and "/" not in p.path[len(prefix):].strip("/"))
        rng = random.Random(f"{self.seed}:long:index:{page.path}")
        lis = "".join(f'<li><a href="{p}">{html.escape(t)}</a></li>' for p, t in items)
        return (f"<h1>{html.escape(page.title)}</h1>\n{self._para(rng)}\n{self._para(rng)}\n"
                f"<ul class=\"index-list\">{lis}</ul>")

    def _render(self, page: Page) -> str:
        rng = random.Random(f"{self.seed}:long:page:{page.id}:v{page.version}")
        updated = page.lastmod.strftime("%B %d, %Y")
        if page.path.endswith("/"):
            article, toc = self._index_article(page), []
        else:
            article, toc = self._article(page, rng, rng.randint(20_000, 45_000))
        toc_html = "".join(f'<li class="toc-h{lv}"><a href="#{a}">{t}</a></li>'
                           for lv, a, t in toc)
        return "\n".join([
            "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(page.title)} | {SITE_NAME}</title>",
            f'<meta name="description" content="{html.escape(page.title)}: how it works in '
            f'the {SITE_NAME}.">',
            '<link rel="stylesheet" href="/assets/handbook.css">',
            '<script src="/assets/handbook.js" defer></script>', "</head>",
            '<body class="docs-page">',
            '<a class="skip-link" href="#main-content">Skip to content</a>',
            self._header,
            '<div class="page-grid">',
            self.sidebar(page),
            '<main id="main-content">',
            self.breadcrumbs(page),
            '<div class="content-grid"><article class="doc-article">',
            article,
            f'<p class="last-updated">Last updated {updated}</p>',
            '<div class="feedback"><p>Was this page helpful?</p><button>Yes</button>'
            "<button>No</button></div>",
            "</article>",
            '<aside class="on-this-page"><p>On this page</p><ul>' + toc_html + "</ul></aside>",
            "</div>",
            '<nav class="pager"><a rel="prev" href="/">Previous</a>'
            f'<a rel="next" href="/docs/{page.section or SECTIONS[0]}/">Next</a></nav>',
            "</main>", "</div>",
            self._footer,
            "</body>", "</html>", ""])
