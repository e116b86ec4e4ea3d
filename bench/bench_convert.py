"""Benchmark: ms/page of our HTML→markdown path vs plain ``markdownify(whole_html)``.

The worker's budget is ~10 ms CPU per page for *everything* (>= 155 pages/s, 4 processes on
2 cores), so conversion has to stay well below that.  Pages are generated here (seeded, so
runs are comparable) to look like real documentation pages: header, a nav with 100 links, a
sidebar, an article with headings, paragraphs, code, tables and lists, and a footer; each is
10-30 KB.

    python bench/bench_convert.py [--pages 200] [--rounds 3] [--phases] [--site DIR]

``--site DIR`` takes ``--pages`` pages (evenly spaced, sorted by path) from a site that
bench/site.py built (either shape) instead of generating them.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_TEXT = (
    "the worker claims a ticket by renaming it and fetches each page politely before it "
    "converts the html into markdown files that stay fresh across incremental crawls with "
    "etag and last modified validators configuration option value returns request response "
    "client server cache timeout retry header body stream session token parser element node"
)
WORDS = _TEXT.split()
LANGS = ("python", "bash", "javascript", "yaml", "json", "go", "rust", "")


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def _paragraph(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(2, 5)):
        s = _sentence(rng, rng.randint(8, 18))
        r = rng.random()
        if r < 0.25:
            w = rng.choice(WORDS)
            s = s.replace(f" {w} ", f' <a href="/docs/{w}/">{w}</a> ', 1)
        elif r < 0.45:
            w = rng.choice(WORDS)
            s = s.replace(f" {w} ", f" <code>{w}_{rng.randint(1, 9)}()</code> ", 1)
        elif r < 0.55:
            w = rng.choice(WORDS)
            s = s.replace(f" {w} ", f" <strong>{w}</strong> ", 1)
        parts.append(s)
    return "<p>" + " ".join(parts) + "</p>\n"


def _code(rng: random.Random) -> str:
    lang = rng.choice(LANGS)
    lines = []
    for i in range(rng.randint(4, 14)):
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        lines.append(f"{'    ' * (i % 3)}{a}_{b} = call(&quot;{b}&quot;, x &lt; {i}) # {a}")
    cls = f' class="language-{lang}"' if lang else ""
    return (f'<div class="highlight"><pre><code{cls}>' + "\n".join(lines)
            + "</code></pre></div>\n")


def _table(rng: random.Random) -> str:
    cols = rng.randint(2, 4)
    head = "".join(f"<th>{rng.choice(WORDS).title()}</th>" for _ in range(cols))
    rows = "".join(
        "<tr>" + "".join(f"<td><code>{rng.choice(WORDS)}</code> {_sentence(rng, 4)}</td>"
                         for _ in range(cols)) + "</tr>\n"
        for _ in range(rng.randint(3, 8))
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>\n"


def _list(rng: random.Random) -> str:
    tag = rng.choice(("ul", "ol"))
    items = "".join(f"<li>{_sentence(rng, rng.randint(4, 12))}</li>\n"
                    for _ in range(rng.randint(3, 7)))
    return f"<{tag}>\n{items}</{tag}>\n"


def make_page(seed: int, target_kb: int | None = None) -> str:
    """One realistic documentation page of 10-30 KB (deterministic for a given seed)."""
    rng = random.Random(seed)
    target = (target_kb or rng.randint(10, 30)) * 1024
    nav = "".join(
        f'<li><a href="/docs/section-{i // 10}/page-{i}/" class="nav-link">'
        f"{rng.choice(WORDS).title()} {i}</a></li>\n" for i in range(100)
    )
    head = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<title>Page {seed} - Project Docs</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="description" content="About {rng.choice(WORDS)} and more.">\n'
        f'<link rel="canonical" href="https://docs.example.com/guide/page-{seed}/">\n'
        '<link rel="stylesheet" href="/static/site.css">\n'
        "<script>window.dataLayer=[];function gtag(){dataLayer.push(arguments)}</script>\n"
        "</head>\n<body>\n"
        '<header class="site-header"><a href="/" class="logo">Project</a>'
        '<form class="search"><input name="q" placeholder="Search"></form></header>\n'
        f'<nav class="sidebar"><ul>\n{nav}</ul></nav>\n'
        '<div class="content"><main>\n<article>\n'
        f'<h1 id="top">Page {seed} guide<a class="headerlink" href="#top">¶</a></h1>\n'
    )
    tail = (
        "</article>\n</main>\n"
        '<aside class="toc"><ul><li><a href="#top">Top</a></li></ul></aside></div>\n'
        '<footer><p>© 2024 Project. Built at 12:00:00.</p><a href="/privacy">Privacy</a>'
        "</footer>\n<script src=\"/static/app.js\"></script>\n</body></html>\n"
    )
    body: list[str] = []
    size = len(head) + len(tail)
    n = 0
    while size < target:
        n += 1
        block = f'<h2 id="s{n}">Section {n} {rng.choice(WORDS)}</h2>\n' + _paragraph(rng)
        for _ in range(rng.randint(1, 3)):
            block += rng.choice((_paragraph, _paragraph, _code, _list, _table))(rng)
        if rng.random() < 0.3:
            block += f"<h3>Details {n}</h3>\n" + _paragraph(rng)
        body.append(block)
        size += len(block.encode())
    return head + "".join(body) + tail


def cpu_ms_rounds(fn: Callable[[Any], object], pages: list[Any], rounds: int) -> list[float]:
    """Mean ms/page of each round (CPU time, since the worker's budget is CPU)."""
    results = []
    for _ in range(rounds):
        t0 = time.process_time()
        for p in pages:
            fn(p)
        results.append((time.process_time() - t0) * 1000 / len(pages))
    return results


def _time(fn: Callable[[Any], object], pages: list[Any], rounds: int) -> float:
    """Best-of-rounds mean ms/page."""
    return min(cpu_ms_rounds(fn, pages, rounds))


def _phases(pages: list[str], rounds: int) -> None:
    """Where the time goes, and what the alternatives to our path would cost."""
    import markdownify
    from bs4 import BeautifulSoup
    from lxml import etree

    from sitemap_crawler.convert import content, render
    from sitemap_crawler.convert import markdown as c

    url = "https://docs.example.com/guide/page/"
    docs = [c._parse(p) for p in pages]
    choices = [content.choose(d) for d in docs]

    def convert(ch: Any) -> str:
        return render.Renderer(url, whole_body=ch.whole_body,
                               drop_elements=ch.widgets).markdown(ch.root)

    mds = [convert(ch) for ch in choices]
    subs = [etree.tostring(ch.root, encoding="unicode", method="html") for ch in choices]
    stock = markdownify.MarkdownConverter(heading_style="atx", bullets="-")
    rows: list[tuple[str, Callable[[Any], object], list[Any]]] = [
        ("parse whole page with lxml", c._parse, pages),
        ("metadata", lambda d: c._read_head(d, url), docs),
        ("pick main content + widgets (content.choose)", content.choose, docs),
        ("render main subtree to markdown (render.Renderer)", convert, choices),
        ("tidy + content hash", lambda m: c.normalized_hash(c._tidy(m)), mds),
        ("alt: stock markdownify of the main subtree",
         lambda s: stock.convert_soup(BeautifulSoup(s, "lxml")), subs),
    ]
    print("phases (CPU ms/page):")
    for name, fn, data in rows:
        print(f"  {name:<52} {_time(fn, data, rounds):7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--phases", action="store_true", help="also break our time down")
    ap.add_argument("--site", type=Path, help="pages from a bench/site.py site directory")
    args = ap.parse_args()

    import markdownify
    from bs4 import BeautifulSoup

    from sitemap_crawler.convert.markdown import html_to_markdown, render_document
    from sitemap_crawler.convert.output import OutputLayout

    if args.site:
        files = sorted(args.site.rglob("*.html"))
        step = max(1, len(files) // args.pages)
        pages = [f.read_text(encoding="utf-8") for f in files[::step][:args.pages]]
    else:
        pages = [make_page(i) for i in range(args.pages)]
    sizes = [len(p.encode()) for p in pages]
    print(f"{len(pages)} pages, {min(sizes) / 1024:.1f}-{max(sizes) / 1024:.1f} KB "
          f"(mean {statistics.mean(sizes) / 1024:.1f} KB), best of {args.rounds} rounds, "
          "CPU ms/page")

    url = "https://docs.example.com/guide/page/"
    rows: list[tuple[str, Callable[[str], object]]] = [
        ("ours: html_to_markdown (main content)",
         lambda p: html_to_markdown(p, url)),
        ("markdownify.markdownify(whole_html)  [html.parser]",
         lambda p: markdownify.markdownify(p)),
        ("markdownify whole page, bs4 'lxml' parser",
         lambda p: markdownify.MarkdownConverter().convert_soup(BeautifulSoup(p, "lxml"))),
    ]
    for name, fn in rows:
        print(f"  {name:<52} {_time(fn, pages, args.rounds):7.2f} ms/page")

    with tempfile.TemporaryDirectory() as tmp:
        layout = OutputLayout(Path(tmp))
        counter = iter(range(10**9))

        def full(p: str) -> None:
            u = f"https://docs.example.com/guide/page-{next(counter)}.html"
            page = html_to_markdown(p, u)
            doc = render_document(page, url=u, final_url=u, status=200,
                                  fetched_at="2024-01-01T00:00:00Z", extra={"etag": '"x"'})
            layout.write_if_changed(layout.path_for(u), doc)

        ms = _time(full, pages, args.rounds)
        print(f"  {'ours + front matter + path_for + write (fsync)':<52} {ms:7.2f} ms/page")
    if args.phases:
        _phases(pages, args.rounds)


if __name__ == "__main__":
    main()
