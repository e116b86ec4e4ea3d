"""A development corpus of real generated docs pages, built from Debian ``-doc`` packages.

Nothing is committed: ``build`` downloads the packages with ``apt-get download`` (the
distribution's own client), unpacks them with ``dpkg-deb -x`` into the work directory, picks
``per_gen`` pages of each generator with a fixed seed, and takes each page's ground truth from
its generator's content element (the element the generator puts the page's text in, minus
the generator's own navigation inside it), as bench_docs takes it from the source: text,
code blocks, tables and headings.  The licence of each package is read from its Debian
``copyright`` file and recorded with the pages.

    python -m bench.generator_corpus /tmp/sitemap-crawler-generators [--per-gen 20]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lxml import etree

from bench.generator_builds import built
from bench.quality import html_text


@dataclass(frozen=True)
class Generator:
    name: str  # generator-theme
    package: str  # the Debian package that ships the HTML
    pages: str  # glob under usr/share/doc
    content: tuple[str, ...]  # XPaths of the content element, first match wins
    drop: tuple[str, ...] = ()  # XPaths (relative to it) of the generator's own chrome
    licence: str = ""  # when the package's copyright file does not name it first
    built: str = ""  # built here by bench/generator_builds.py instead of a Debian package
    exclude: str = r"(?:genindex|search|py-modindex|index_?[a-z]?|globals.*|functions.*|" \
                   r"files|annotated.*|classes|hierarchy|namespace.*members.*|modules)\.html$"


_PERMALINKS = (".//a[contains(@class,'headerlink')]", ".//a[contains(@class,'anchor')]",
               ".//a[.//span[@class='viewcode-link']]")  # (Sphinx's "[source]" links)
_DOXYGEN = (".//div[@id='nav-path']", ".//div[@id='MSearchSelectWindow']",
            ".//div[@id='MSearchResultsWindow']", ".//span[@class='permalink']",
            ".//div[@class='ttc']")  # (hover tooltips in code, hidden by CSS)
GENERATORS = [
    Generator("docbook-postgresql", "postgresql-doc-15", "postgresql-doc-15/html/*.html",
              ("//body",), (".//div[@class='navheader']", ".//div[@class='navfooter']")),
    Generator("docbook-libstdcxx", "libstdc++-12-doc", "gcc-12-base/libstdc++/manual/*.html",
              ("//body",), (".//div[@class='navheader']", ".//div[@class='navfooter']"),
              licence="GFDL-1.3 / GPL-3 (GCC)"),
    Generator("doxygen-eigen", "libeigen3-doc", "libeigen3-dev/html/*.html",
              ("//div[@id='doc-content']",),
              (*_DOXYGEN, ".//div[@class='summary']", ".//div[@id='nav-tree']")),
    Generator("doxygen-libstdcxx", "libstdc++-12-doc", "gcc-12-base/libstdc++/user/a*.html",
              ("//div[@class='contents']/..",),
              (*_DOXYGEN, ".//div[@class='summary']", ".//div[@id='top']"),
              licence="GPL-3 with GCC runtime exception"),
    Generator("doxygen-manual", "doxygen-doc", "doxygen/html/*.html",
              ("//div[@id='doc-content']",), _DOXYGEN),
    Generator("doxygen-sdl", "libsdl2-doc", "libsdl2-doc/html/*.html",
              ("//div[@class='contents']/..",),
              (*_DOXYGEN, ".//div[@class='summary']", ".//div[@id='top']")),
    Generator("rustdoc", "rust-doc", "rust-doc/html/std/*/*.html",
              ("//section[@id='main-content']",),
              (".//*[contains(@class,'out-of-band')]", ".//*[contains(@class,'rightside')]",
               ".//a[contains(@class,'anchor')]", ".//summary[contains(@class,'hideme')]",
               ".//a[contains(@class,'srclink')]", ".//a[contains(@class,'test-arrow')]",
               ".//*[contains(@class,'notable-traits')]", ".//div[@class='tooltip']")),
    Generator("mdbook", "rust-doc", "rust-doc/html/book/ch*.html", ("//main",),
              _PERMALINKS),
    Generator("sphinx-pydoctheme", "python3.11-doc", "python3.11/html/library/*.html",
              ("//div[@role='main']",), _PERMALINKS, licence="PSF-2.0"),
    Generator("sphinx-sphinx13", "sphinx-doc", "sphinx-doc/html/**/*.html",
              ("//div[@role='main']",), _PERMALINKS),
    Generator("sphinx-django", "python-django-doc", "python-django-doc/html/*/*/*.html",
              ("//div[@class='yui-g']",
               ), (*_PERMALINKS, ".//div[@class='nav']")),
    Generator("asciidoc-git", "git-doc", "git-doc/git-*.html", ("//body",),
              (".//div[@id='footer']", ".//div[@id='toc']")),
    Generator("rdoc-asciidoctor", "asciidoctor-doc", "asciidoctor-doc/html/**/*.html",
              ("//main",), (".//a[contains(@class,'anchor')]",)),
    Generator("haddock-cpphs", "libghc-cpphs-doc", "libghc-cpphs-doc/html/*.html",
              ("//div[@id='content']",),
              (".//div[@id='synopsis']", ".//a[@class='link']", ".//a[@class='selflink']")),
    Generator("apache-manual", "apache2-doc", "apache2-doc/manual/en/mod/*.html",
              ("//div[@id='page-content']",),
              (".//div[@id='quickview']", ".//div[@class='top']", ".//div[@class='toplang']",
               ".//a[@class='permalink']",
               ".//div[@class='bottomlang']", ".//div[@id='footer']")),
    Generator("javadoc", "libcommons-lang3-java-doc",
              "libcommons-lang3-java/api/org/apache/commons/lang3/*.html", ("//main",), ()),
    Generator("mkdocs-bootstrap", "mkdocs-doc", "mkdocs/html/**/*.html",
              ("//div[@role='main']",), _PERMALINKS),
    Generator("gtk-doc", "libglib2.0-doc", "libglib2.0-doc/glib/*.html",
              ("//div[@class='refentry']", "//div[@class='chapter']"), ()),
    Generator("gi-docgen", "libgtk-4-doc", "libgtk-4-doc/gtk4/*.html",
              ("//section[@id='main']",), (".//button", ".//a[@class='srclink']")),
    Generator("sphinx-flask", "python-flask-doc", "python-flask-doc/html/**/*.html",
              ("//div[@role='main']",), _PERMALINKS),
    Generator("sphinx-zzzeeksphinx", "python-sqlalchemy-doc",
              "python-sqlalchemy-doc/html/**/*.html", ("//div[@id='docs-body']",),
              _PERMALINKS),
    Generator("sphinx-cmake", "cmake-doc", "cmake-data/html/*/*.html",
              ("//div[@role='main']",), _PERMALINKS, licence="BSD-3-clause"),
    Generator("nodejs-apidoc", "nodejs-doc", "nodejs/api/*.html",
              ("//div[@id='apicontent']",), (".//span[@class='mark']",
                                              ".//a[@class='mark']"), licence="Expat"),
    Generator("erlang-docgen", "erlang-doc", "erlang-doc/doc/*/*.html",
              ("//div[@id='content']",), (".//div[@class='footer']",)),
    Generator("texinfo-octave", "octave-doc", "octave/octave.html/*.html", ("//body",),
              (".//div[@class='header']", ".//div[@class='nav-panel']")),
    Generator("sqlite-site", "sqlite3-doc", "sqlite3/*.html",
              ("//div[@class='fancy']", "//body"), (".//div[@class='nosearch']",)),
    Generator("material-blog-listing", "", "blog/*/*/index.html",
              ("//div[@class='md-content__inner']",),
              (".//a[@class='headerlink']", ".//nav[@class='md-post__action']",
               ".//*[contains(@class,'md-pagination')]"),
              licence="npm packages' READMEs (mostly MIT)", built="material-blog",
              exclude=r"^404"),
    Generator("pdoc", "", "*.html", ("//main",),
              (".//a[@class='headerlink']", ".//label[contains(@class,'view-source')]",
               ".//input[contains(@class,'view-source')]/following-sibling::div"
               "[contains(@class,'pdoc-code')]", ".//input"),
              licence="PSF-2.0 (CPython docstrings)", built="pdoc"),
    Generator("typedoc", "", "*/*.html", ("//div[@class='col-content']",),
              (".//ul[contains(@class,'tsd-breadcrumb')]",
               ".//a[contains(@class,'tsd-anchor-icon')]",
               ".//aside[contains(@class,'tsd-sources')]", ".//svg",
               ".//section[contains(@class,'tsd-index-panel')]"),
              licence="Apache-2.0 (TypeDoc's own declarations)", built="typedoc"),
    Generator("vitepress", "", "*.html", ("//div[contains(@class,'vp-doc')]",),
              (".//a[contains(@class,'header-anchor')]", ".//span[@class='lang']",
               ".//button"), licence="npm packages' READMEs (mostly MIT)", built="vitepress"),
    Generator("starlight", "", "*/index.html", ("//main",),
              (".//a[contains(@class,'sl-anchor-link')]", ".//footer",
               ".//mobile-starlight-toc"),
              licence="npm packages' READMEs (mostly MIT)", built="starlight",
              exclude=r"^404"),
]


def _download(workdir: Path, packages: set[str]) -> Path:
    debs, root = workdir / "debs", workdir / "root"
    debs.mkdir(parents=True, exist_ok=True)
    have = {p.name.split("_")[0] for p in debs.glob("*.deb")}
    missing = sorted(packages - have)
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True,
                       stdout=subprocess.DEVNULL)
    for deb in sorted(debs.glob("*.deb")):
        mark = root / ".unpacked" / deb.name
        if not mark.exists():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.touch()
    return root / "usr/share/doc"


def _licence(doc: Path, package: str) -> str:
    """The first ``License:`` line of the package's Debian copyright file."""
    for path in (doc / package / "copyright",):
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("License:") and line.split(":", 1)[1].strip():
                    return line.split(":", 1)[1].strip()
    return "see the package's copyright file"


def _drop(el: Any) -> None:
    """Remove ``el`` but keep the text after it (lxml's remove() takes the tail along)."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _code(el: Any) -> str:
    """A code block's text as a reader sees it: <br> and per-line blocks are line ends,
    line-number gutters left out, trailing spaces and blank edge lines trimmed."""
    from sitemap_crawler.convert.render import is_gutter
    out: list[str] = []

    def walk(e: Any) -> None:
        if e.text:
            out.append(e.text)
        for c in e:
            if isinstance(c.tag, str):
                if c.tag == "br":
                    out.append("\n")
                elif not is_gutter(c.get("class") or "") and c.get("aria-hidden") != "true" \
                        and c.get("class") != "ttc" and c.tag != "button":
                    # (Doxygen's tooltips are hidden by CSS; TypeDoc's Copy is a button)
                    line = c.tag in ("div", "p", "li", "tr")  # one block per line
                    if line and out and not out[-1].endswith("\n"):
                        out.append("\n")
                    walk(c)
                    if line:
                        if out and not out[-1].endswith("\n"):
                            out.append("\n")
                        if c.tail and not c.tail.strip():
                            continue  # the newline between two line <div>s ends that line
            if c.tail:
                out.append(c.tail)

    walk(el)
    lines = [ln.rstrip() for ln in "".join(out).replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


_LAYOUT = ".//table|.//pre|.//ul|.//ol|.//h1|.//h2|.//h3|.//blockquote|.//dl"


def truth_of(root: Any) -> dict[str, Any]:
    """Text, code blocks, tables and headings of a content element (already cleaned)."""
    for bad in root.xpath(".//script|.//style|.//noscript|.//template|.//iframe|.//object"):
        _drop(bad)
    codes = [c for c in (_code(p) for p in root.xpath(
        ".//pre[not(ancestor::pre)]|.//div[contains(@class,'fragment')][div[@class='line']]"))
        if c]
    tables = []
    for t in root.iter("table"):
        if t.xpath(_LAYOUT) or t.xpath("ancestor::table") or \
                t.xpath("ancestor::div[contains(@class,'admonitionblock')]"):
            continue  # (AsciiDoc draws its note boxes as tables: they are notes)
        rows = []
        for tr in t.iter("tr"):
            row: list[str] = []
            for td in tr:
                if td.tag in ("td", "th"):
                    row.append(_norm("".join(td.itertext())))
                    span = td.get("colspan", "")
                    row.extend([""] * (int(span) - 1 if span.isdigit() and int(span) > 1
                                       else 0))
            if row:
                rows.append(row)
        width = max(map(len, rows), default=0)
        if width >= 2:  # short rows are padded, as a GFM table shows them
            tables.append([row + [""] * (width - len(row)) for row in rows])
    heads = [(int(h.tag[1]), _norm("".join(h.itertext())))
             for h in root.iter("h1", "h2", "h3", "h4", "h5", "h6")
             if _norm("".join(h.itertext()))]
    text = html_text(etree.tostring(root, encoding="unicode", method="html"))
    return {"text": text, "codes": codes, "tables": tables, "headings": heads, "terms": []}


def build(workdir: Path, per_gen: int = 20, seed: int = 19,
          only: set[str] | None = None) -> list[dict[str, Any]]:
    """The corpus records (generator, path, truth, source, licence); cached in corpus.json."""
    workdir.mkdir(parents=True, exist_ok=True)
    cache = workdir / f"corpus-{per_gen}-{seed}.json"
    cached = json.loads(cache.read_text()) if cache.exists() else []
    have = {r["generator"] for r in cached}
    gens = [g for g in GENERATORS if (not only or g.name in only) and g.name not in have]
    if not gens:  # (generators added later are built and appended; the rest stay as cached)
        return [r for r in cached if not only or r["generator"] in only]
    doc = _download(workdir, {g.package for g in gens if g.package})
    records = []
    for g in gens:
        base = built(workdir, g.built) if g.built else doc
        if base is None:
            continue
        paths = sorted(p for p in base.glob(g.pages)
                       if p.is_file() and not re.search(g.exclude, p.name)
                       and "_source" not in p.name and p.stat().st_size < 2_000_000)
        random.Random(f"{seed}-{g.name}").shuffle(paths)
        taken = 0
        for path in paths:
            if taken >= per_gen:
                break
            tree = etree.parse(str(path), etree.HTMLParser(huge_tree=True, remove_comments=True))
            root = next((r for x in g.content for r in tree.xpath(x)), None)
            if root is None:
                continue
            for xp in g.drop:
                for bad in root.xpath(xp):
                    _drop(bad)
            truth = truth_of(root)
            if len(truth["text"]) < 300:  # an index or redirect stub: not a page to judge
                continue
            records.append({"generator": g.name, "path": str(path), "truth": truth,
                            "package": g.package,
                            "licence": g.licence or _licence(doc, g.package)})
            taken += 1
    cache.write_text(json.dumps(cached + records))
    return [r for r in cached + records if not only or r["generator"] in only]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--per-gen", type=int, default=20)
    args = ap.parse_args()
    records = build(args.workdir, args.per_gen)
    seen: dict[str, tuple[str, str, int]] = {}
    for r in records:
        n = seen.get(r["generator"], (r["package"], r["licence"], 0))[2]
        seen[r["generator"]] = (r["package"], r["licence"], n + 1)
    for gen, (pkg, lic, n) in seen.items():
        print(f"{gen:<22} {n:>3} pages  {pkg}  ({lic})")


if __name__ == "__main__":
    main()
