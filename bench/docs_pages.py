"""Docs pages for bench_docs: one seeded spec per page, written as reStructuredText for Sphinx
and as Markdown for MkDocs, built by the real generators, with what each page must contain.

A page spec is a list of blocks (heading, paragraph, code, table, nested list, definition
list, API entry, admonition, tabs).  ``truth`` holds the page's text, its headings with their
levels, its code blocks exactly and its tables cell by cell, so the markdown produced from
the generated HTML can be checked against what the author wrote, not against another
converter.  The vocabulary has no word a theme's chrome uses (next, previous, search, page,
contents, copyright ...), so any such line in the output is a leaked line.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

_VOCAB = ("worker claims ticket renaming fetches politely converts markdown files fresh "
         "incremental crawls validators configuration option value returns request response "
         "client server cache timeout retry header body stream session token parser element "
         "node sitemap robots directive lease heartbeat journal index budget host gate shard "
         "queue backoff mirror snapshot archive ledger cursor offset window bucket digest")
WORDS = tuple(_VOCAB.split())
LANGS = ("python", "bash", "yaml", "json", "toml")
THEMES = {"sphinx": ("alabaster", "furo", "sphinx_rtd_theme"), "mkdocs": ("mkdocs", "material")}


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _sentence(rng: random.Random) -> str:
    s = _words(rng, rng.randint(8, 16))
    return s[0].upper() + s[1:] + "."


def _code(rng: random.Random, lang: str) -> str:
    lines = []
    for i in range(rng.randint(3, 9)):
        if i and rng.random() < 0.2:
            lines.append("")
        # the first line is not indented: reST strips the indentation common to all lines
        indent = "    " * rng.randint(0, 2) if lang in ("python", "yaml") and i else ""
        w = rng.sample(WORDS, 3)
        if lang == "python":
            lines.append(f"{indent}{w[0]}_{w[1]} = {w[2]}({i}, '<{w[0]}>')  # {w[1]} & {w[2]}")
        elif lang == "bash":
            lines.append(f"$ sitemap-crawler {w[0]} --{w[1]} {w[2]} | grep '{w[0]}' > out.txt")
        elif lang == "yaml":
            lines.append(f"{indent}{w[0]}_{w[1]}: {w[2]}")
        elif lang == "json":
            lines.append(f'  "{w[0]}": ["{w[1]}", {i}],' if lines else "{")
        else:
            lines.append(f'{w[0]}_{w[1]} = "{w[2]}"')
    if lang == "json":
        lines.append("}")
    return "\n".join(lines)


def make_spec(rng: random.Random, n: int) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    title = _words(rng, 3).title()
    kinds = ["para", "code", "table", "list", "deflist", "admonition", "tabs", "api"]
    for i in range(rng.randint(5, 8)):
        blocks.append({"kind": "heading", "level": 2 if i % 3 == 0 else 3,
                       "text": _words(rng, 3).capitalize()})
        blocks.append({"kind": "para", "text": " ".join(_sentence(rng) for _ in range(3)),
                       "code": f"{rng.choice(WORDS)}_{rng.choice(WORDS)}()",
                       "link": rng.choice(WORDS)})
        for kind in rng.sample(kinds, 3):
            if kind == "para":
                blocks.append({"kind": "para", "text": _sentence(rng), "code": "", "link": ""})
            elif kind == "code":
                lang = rng.choice(LANGS)
                blocks.append({"kind": "code", "lang": lang, "code": _code(rng, lang),
                               "linenos": rng.random() < 0.3})
            elif kind == "table":
                cols = rng.randint(2, 4)
                rows = [[_words(rng, 2).capitalize() for _ in range(cols)]]
                for _ in range(rng.randint(2, 5)):
                    row = [_words(rng, rng.randint(1, 4)) for _ in range(cols)]
                    if rng.random() < 0.4:
                        row[0] = f"--{rng.choice(WORDS)}"
                    if rng.random() < 0.3:
                        row[-1] = f"{rng.choice(WORDS)} | {rng.choice(WORDS)}"
                    rows.append(row)
                blocks.append({"kind": "table", "rows": rows, "header": rng.random() < 0.8})
            elif kind == "list":
                items = [{"text": _words(rng, rng.randint(3, 8)),
                          "sub": [_words(rng, 3) for _ in range(rng.randint(0, 3))]}
                         for _ in range(rng.randint(2, 5))]
                blocks.append({"kind": "list", "items": items})
            elif kind == "deflist":
                blocks.append({"kind": "deflist", "items": [
                    (f"{rng.choice(WORDS)}_{rng.choice(WORDS)}", _sentence(rng))
                    for _ in range(rng.randint(2, 4))]})
            elif kind == "admonition":
                blocks.append({"kind": "admonition", "type": rng.choice(["note", "warning"]),
                               "text": _sentence(rng)})
            elif kind == "tabs":
                blocks.append({"kind": "tabs", "tabs": [
                    (lab, _sentence(rng)) for lab in rng.sample(["Linux", "macOS", "Windows"],
                                                                2)]})
            elif kind == "api":
                name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}"
                blocks.append({"kind": "api", "name": name,
                               "args": ", ".join(rng.sample(WORDS, 2)),
                               "text": _sentence(rng)})
    return {"name": f"page{n:03d}", "title": title, "blocks": blocks}


# --- truth -----------------------------------------------------------------------------------

def truth(spec: dict[str, Any], generator: str) -> dict[str, Any]:
    lines = [spec["title"]]
    headings = [(1, spec["title"])]
    codes, tables, terms = [], [], []
    for b in spec["blocks"]:
        k = b["kind"]
        if k == "heading":
            lines.append(b["text"])
            headings.append((b["level"], b["text"]))
        elif k == "para":
            extra = f" {b['code']} {b['link']}" if b["code"] else ""
            lines.append(b["text"] + extra)
        elif k == "code":
            lines.append(b["code"])
            codes.append(b["code"])
        elif k == "table":
            rows = b["rows"]
            lines.extend(" ".join(r) for r in rows)
            tables.append(rows)
        elif k == "list":
            for it in b["items"]:
                lines.append(it["text"])
                lines.extend(it["sub"])
        elif k == "deflist":
            for term, d in b["items"]:
                lines += [term, d]
                terms.append((term, d))
        elif k == "admonition":  # Docusaurus prints the type as written (CSS upper-cases it)
            title = b["type"] if generator == "docusaurus" else b["type"].capitalize()
            lines += [title, b["text"]]
        elif k == "tabs":
            for lab, text in b["tabs"]:
                lines += [lab, text]
        elif k == "api":
            sig = f"{b['name']}({b['args']})" if generator == "sphinx" else b["name"]
            lines += [sig, b["text"]]
            terms.append((sig, b["text"]))
    return {"text": "\n".join(lines), "headings": headings, "codes": codes, "tables": tables,
            "terms": terms}


# --- sources ---------------------------------------------------------------------------------

def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + ln if ln else "" for ln in text.split("\n"))


def rst(spec: dict[str, Any]) -> str:
    out = [spec["title"], "=" * len(spec["title"]), ""]
    for b in spec["blocks"]:
        k = b["kind"]
        if k == "heading":
            out += [b["text"], ("-" if b["level"] == 2 else "~") * len(b["text"]), ""]
        elif k == "para":
            extra = (f" ``{b['code']}`` `{b['link']} <https://example.org/{b['link']}>`_"
                     if b["code"] else "")
            out += [b["text"] + extra, ""]
        elif k == "code":
            out += [f".. code-block:: {b['lang']}"] + (["   :linenos:"] if b["linenos"] else [])
            out += ["", _indent(b["code"], 3), ""]
        elif k == "table":
            out += [".. list-table::"] + (["   :header-rows: 1"] if b["header"] else []) + [""]
            for row in b["rows"]:
                for j, cell in enumerate(row):
                    cell = f"``{cell}``" if cell.startswith("--") else cell
                    out.append(("   * - " if j == 0 else "     - ") + cell)
            out.append("")
        elif k == "list":
            for it in b["items"]:
                out += [f"- {it['text']}", ""]
                for sub in it["sub"]:
                    out.append(f"  - {sub}")
                if it["sub"]:
                    out.append("")
        elif k == "deflist":
            for term, d in b["items"]:
                out += [term, f"   {d}", ""]
        elif k == "admonition":
            out += [f".. {b['type']}::", "", f"   {b['text']}", ""]
        elif k == "tabs":
            out += [".. tab-set::", ""]
            for lab, text in b["tabs"]:
                out += [f"   .. tab-item:: {lab}", "", f"      {text}", ""]
        elif k == "api":
            out += [f".. py:function:: {b['name']}({b['args']})", "", f"   {b['text']}", ""]
    return "\n".join(out) + "\n"


def markdown(spec: dict[str, Any]) -> str:
    out = [f"# {spec['title']}", ""]
    for b in spec["blocks"]:
        k = b["kind"]
        if k == "heading":
            out += ["#" * b["level"] + " " + b["text"], ""]
        elif k == "para":
            extra = (f" `{b['code']}` [{b['link']}](https://example.org/{b['link']})"
                     if b["code"] else "")
            out += [b["text"] + extra, ""]
        elif k == "code":
            opt = ' linenums="1"' if b["linenos"] else ""
            out += [f"``` {b['lang']}{opt}", b["code"], "```", ""]
        elif k == "table":
            rows = [[(f"`{c}`" if c.startswith("--") else c).replace("|", "\\|") for c in r]
                    for r in b["rows"]]
            out.append("| " + " | ".join(rows[0]) + " |")
            out.append("|" + "---|" * len(rows[0]))
            out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            out.append("")
        elif k == "list":
            for it in b["items"]:
                out.append(f"- {it['text']}")
                out += [f"    - {sub}" for sub in it["sub"]]
            out.append("")
        elif k in ("deflist", "api"):
            items = b["items"] if k == "deflist" else [(b["name"], b["text"])]
            for term, d in items:
                out += [term, f":   {d}", ""]
        elif k == "admonition":
            out += [f"!!! {b['type']}", "", f"    {b['text']}", ""]
        elif k == "tabs":
            for lab, text in b["tabs"]:
                out += [f'=== "{lab}"', "", f"    {text}", ""]
    return "\n".join(out) + "\n"


def mdx(spec: dict[str, Any]) -> str:
    """Docusaurus' MDX: Markdown plus JSX for tabs and for definition lists (no MDX syntax)."""
    out = ["import Tabs from '@theme/Tabs';", "import TabItem from '@theme/TabItem';", ""]
    for b in spec["blocks"]:
        k = b["kind"]
        if k == "code":
            opt = " showLineNumbers" if b["linenos"] else ""
            out += [f"```{b['lang']}{opt}", b["code"], "```", ""]
        elif k in ("deflist", "api"):
            items = b["items"] if k == "deflist" else [(b["name"], b["text"])]
            out.append("<dl>")
            out += [f"  <dt>{term}</dt>\n  <dd>{d}</dd>" for term, d in items]
            out += ["</dl>", ""]
        elif k == "admonition":
            out += [f":::{b['type']}", "", b["text"], "", ":::", ""]
        elif k == "tabs":
            out.append("<Tabs>")
            for lab, text in b["tabs"]:
                out += [f'  <TabItem value="{lab.lower()}" label="{lab}">', "", text, "",
                        "  </TabItem>"]
            out += ["</Tabs>", ""]
        else:
            out.append(markdown({"title": "", "blocks": [b]}).split("\n", 2)[2])
    return f"# {spec['title']}\n\n" + "\n".join(out) + "\n"


DOCUSAURUS_CONFIG = """module.exports = {
  title: 'Bench', url: 'http://127.0.0.1', baseUrl: '/',
  onBrokenLinks: 'ignore', onBrokenMarkdownLinks: 'ignore',
  presets: [['classic', {docs: {routeBasePath: '/'}, blog: false, pages: false}]],
};
"""


def build_docusaurus(workdir: Path, specs: list[dict[str, Any]], install: Path) -> list[dict]:
    """Build with a Docusaurus install (a directory holding node_modules/@docusaurus/core)."""
    site = workdir / "docusaurus-classic"
    shutil.rmtree(site, ignore_errors=True)
    (site / "docs").mkdir(parents=True)
    (site / "docusaurus.config.js").write_text(DOCUSAURUS_CONFIG, encoding="utf-8")
    (site / "node_modules").symlink_to(install.resolve() / "node_modules")
    for n, s in enumerate(specs):
        (site / "docs" / f"{s['name']}.mdx").write_text(
            f"---\nsidebar_position: {n + 1}\n---\n\n" + mdx(s), encoding="utf-8")
    subprocess.run([str(install / "node_modules/.bin/docusaurus"), "build", "--out-dir",
                    "build"], cwd=site, check=True, capture_output=True)
    return [{"generator": "docusaurus-classic",
             "path": str(site / "build" / s["name"] / "index.html"),
             "truth": truth(s, "docusaurus")} for s in specs]


def hugo_markdown(spec: dict[str, Any]) -> str:
    """Hugo's Goldmark: Markdown with definition lists, Chroma code (``linenos=table``), no
    admonition or tab syntax in Hugo 0.111 (a quote with a bold title, bold tab labels)."""
    out = ["---", f"title: {spec['title']}", "---", ""]
    for b in spec["blocks"]:
        k = b["kind"]
        if k == "code":
            opt = " {linenos=table}" if b["linenos"] else ""
            out += [f"```{b['lang']}{opt}", b["code"], "```", ""]
        elif k == "admonition":
            out += [f"> **{b['type'].capitalize()}**", ">", f"> {b['text']}", ""]
        elif k == "tabs":
            for lab, text in b["tabs"]:
                out += [f"**{lab}**", "", text, ""]
        else:
            out.append(markdown({"title": "", "blocks": [b]}).split("\n", 2)[2])
    return "\n".join(out) + "\n"


HUGO_CONFIG = """baseURL = 'http://127.0.0.1/'
title = 'Bench'
[markup.highlight]
  noClasses = false
"""
HUGO_SINGLE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>{{ .Title }} | {{ .Site.Title }}</title></head><body>
<header class="site-header"><a class="brand" href="/">{{ .Site.Title }}</a>
<nav><ul>{{ range .Site.RegularPages }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>
{{ end }}</ul></nav></header>
<div class="container"><main><article class="content"><h1>{{ .Title }}</h1>
{{ .Content }}</article>
<aside class="toc"><h2>On this page</h2>{{ .TableOfContents }}</aside></main></div>
<footer class="site-footer"><p>Made with Hugo. Copyright Bench authors.</p></footer>
</body></html>
"""


def build_hugo(workdir: Path, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Build with the ``hugo`` binary and a small layout of our own (no theme is installable
    offline); the content markup is Hugo's: Goldmark and Chroma."""
    site = workdir / "hugo-plain"
    shutil.rmtree(site, ignore_errors=True)
    (site / "content").mkdir(parents=True)
    (site / "layouts" / "_default").mkdir(parents=True)
    (site / "hugo.toml").write_text(HUGO_CONFIG, encoding="utf-8")
    (site / "layouts" / "_default" / "single.html").write_text(HUGO_SINGLE, encoding="utf-8")
    (site / "layouts" / "_default" / "list.html").write_text("{{ .Title }}", encoding="utf-8")
    for s in specs:
        (site / "content" / f"{s['name']}.md").write_text(hugo_markdown(s), encoding="utf-8")
    subprocess.run(["hugo", "--quiet", "-s", str(site), "-d", str(site / "public")],
                   check=True, capture_output=True)
    return [{"generator": "hugo-plain", "path": str(site / "public" / s["name"] / "index.html"),
             "truth": truth(s, "hugo")} for s in specs]


# --- building --------------------------------------------------------------------------------

MKDOCS_EXT = """markdown_extensions:
  - admonition
  - def_list
  - tables
  - pymdownx.highlight
  - pymdownx.superfences
  - pymdownx.tabbed:
      alternate_style: true
"""


def build(workdir: Path, pages: int, seed: int = 9,
          docusaurus: Path | None = None) -> list[dict[str, Any]]:
    """Write the sources, run the generators, return one record per built HTML page."""
    rng = random.Random(seed)
    specs = [make_spec(rng, n) for n in range(pages)]
    records: list[dict[str, Any]] = []
    for gen, themes in THEMES.items():
        for theme in themes:
            src = workdir / f"{gen}-{theme}" / "src"
            out = workdir / f"{gen}-{theme}" / "html"
            shutil.rmtree(src.parent, ignore_errors=True)
            src.mkdir(parents=True)
            if gen == "sphinx":
                (src / "conf.py").write_text(
                    f"project = 'Bench'\nhtml_theme = {theme!r}\n"
                    "extensions = ['sphinx_design']\n", encoding="utf-8")
                names = [s["name"] for s in specs]
                (src / "index.rst").write_text(
                    "Bench\n=====\n\n.. toctree::\n\n" + "".join(f"   {n}\n" for n in names),
                    encoding="utf-8")
                for s in specs:
                    (src / f"{s['name']}.rst").write_text(rst(s), encoding="utf-8")
                cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out)]
            else:
                docs = src / "docs"
                docs.mkdir()
                (src / "mkdocs.yml").write_text(
                    f"site_name: Bench\ntheme:\n  name: {theme}\n" + MKDOCS_EXT, encoding="utf-8")
                (docs / "index.md").write_text("# Bench\n", encoding="utf-8")
                for s in specs:
                    (docs / f"{s['name']}.md").write_text(markdown(s), encoding="utf-8")
                cmd = [sys.executable, "-m", "mkdocs", "build", "-q", "-f",
                       str(src / "mkdocs.yml"), "-d", str(out)]
            subprocess.run(cmd, check=True, capture_output=True)
            for s in specs:
                html = out / f"{s['name']}.html"
                if not html.exists():
                    html = out / s["name"] / "index.html"
                records.append({"generator": f"{gen}-{theme}", "path": str(html),
                                "truth": truth(s, gen)})
    if docusaurus is not None:
        records += build_docusaurus(workdir, specs, docusaurus)
    if shutil.which("hugo"):
        records += build_hugo(workdir, specs)
    (workdir / "pages.json").write_text(json.dumps(records), encoding="utf-8")
    return records
