"""Docs pages built by the real generators: is the markdown the page?  Ours beside trafilatura.

``bench/docs_pages.py`` writes seeded pages (headings, code, tables, nested lists, definition
lists, API entries, admonitions, tabs) as reStructuredText and Markdown and builds them with
Sphinx (alabaster, furo, sphinx_rtd_theme) and MkDocs (mkdocs, material).  Each converter's
markdown is rendered with markdown-it-py (CommonMark + GFM tables) and checked:

- text P/R/F1: the article benchmark's evaluate.py shingles against the page's source text;
- leaked lines: rendered lines with under half of their words from the page's source;
- code exact: a fenced/indented block whose content is the source code, byte for byte;
- tables: a rendered <table> whose cells are the source cells;
- headings: an <hN> of the source level with the source text;
- terms: definition-list terms and API signatures shown bold or as a term, and their
  definitions as a paragraph (not swallowed by a code block);
- ms/page: median CPU time of the conversion (parse included).

    python -m bench.bench_docs [--pages 12] [--workdir /tmp/sitemap-crawler-docs-bench]
                               [--only ours] [--show GENERATOR/PAGE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lxml import etree

from bench.docs_pages import build
from bench.quality import finish, html_text, md_html, median, prf, scorer, timed

_WORD_RE = re.compile(r"\w+")
URL = "https://docs.example.com/bench/page/"


def ours(html: str) -> str:
    from sitemap_crawler.convert.markdown import html_to_markdown
    return html_to_markdown(html, URL).markdown


def trafilatura_md(html: str) -> str:
    import trafilatura
    return trafilatura.extract(html, url=URL, output_format="markdown", include_tables=True,
                               include_formatting=True, include_links=True) or ""


def converters(only: str | None) -> dict[str, Any]:
    """Ours and trafilatura (or the one ``--only`` names), markdown from HTML."""
    tools = {"ours": ours, "trafilatura": trafilatura_md}
    return {only: tools[only]} if only else tools


def _norm(text: str) -> str:
    return " ".join(text.split())


def check(markdown: str, truth: dict[str, Any]) -> dict[str, Any]:
    """Counts for one page: what of the source survives, rendered back."""
    html = md_html(markdown)
    text = html_text(html)
    root = etree.fromstring(f"<div>{html}</div>", etree.HTMLParser()) if html.strip() else None
    vocab = set(_WORD_RE.findall(truth["text"].lower()))
    lines = [ln for ln in text.split("\n") if _WORD_RE.search(ln)]
    leaked = [ln for ln in lines
              if sum(w in vocab for w in _WORD_RE.findall(ln.lower()))
              < 0.5 * len(_WORD_RE.findall(ln))]
    blocks, heads, tables, strong, paras = [], set(), [], set(), set()
    if root is not None:
        blocks = ["".join(c.itertext()).rstrip("\n") for c in root.iter("code")
                  if c.getparent() is not None and c.getparent().tag == "pre"]
        heads = {(int(h.tag[1]), _norm("".join(h.itertext())))
                 for h in root.iter("h1", "h2", "h3", "h4", "h5", "h6")}
        for br in root.iter("br"):  # a line break in a cell is a space between its words
            br.tail = "\n" + (br.tail or "")
        for t in root.iter("table"):
            tables.append([[_norm("".join(c.itertext())) for c in tr if c.tag in ("td", "th")]
                           for tr in t.iter("tr")])
        strong = {_norm("".join(s.itertext())) for s in root.iter("strong", "dt")}
        paras = {_norm("".join(p.itertext())) for p in root.iter("p", "dd")}
    codes_ok = sum(c in blocks for c in truth["codes"])
    tables_ok = sum(
        any(_table_match(t, rows) for t in tables) for rows in truth["tables"])
    heads_ok = sum((lvl, _norm(tx)) in heads for lvl, tx in truth["headings"])
    terms_ok = sum(any(_norm(term) in s for s in strong) and _norm(d) in paras
                   for term, d in truth["terms"])
    return {"text": text, "lines": len(lines), "leaked": len(leaked), "leaked_lines": leaked,
            "codes": len(truth["codes"]), "codes_ok": codes_ok,
            "tables": len(truth["tables"]), "tables_ok": tables_ok,
            "headings": len(truth["headings"]), "headings_ok": heads_ok,
            "terms": len(truth["terms"]), "terms_ok": terms_ok}


def _table_match(rendered: list[list[str]], rows: list[list[str]]) -> bool:
    rows = [[_norm(c) for c in r] for r in rows]
    return rendered == rows or rendered[1:] == rows  # header-less source: any header row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=12, help="pages per generator/theme")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/sitemap-crawler-docs-bench"))
    ap.add_argument("--only", choices=["ours", "trafilatura"])
    ap.add_argument("--show", help="print our markdown of GENERATOR/PAGE (e.g. "
                    "mkdocs-material/page003) and its leaked lines")
    ap.add_argument("--docusaurus", type=Path, help="a directory where `npm install "
                    "@docusaurus/core@3.5.2 @docusaurus/preset-classic@3.5.2 react@18 "
                    "react-dom@18 webpack@5.95.0` ran: "
                    "also build the pages with Docusaurus")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    records = build(args.workdir, args.pages, docusaurus=args.docusaurus)
    ev = scorer()
    results: dict[str, Any] = {}
    for name, fn in converters(args.only).items():
        per_gen: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        pairs, times = [], []
        for rec in records:
            html = Path(rec["path"]).read_text(encoding="utf-8")
            md, ms = timed(lambda fn=fn, html=html: fn(html))
            times.append(ms)
            c = check(md, rec["truth"])
            pairs.append((rec["truth"]["text"], c["text"]))
            g = per_gen[rec["generator"]]
            for k in ("lines", "leaked", "codes", "codes_ok", "tables", "tables_ok",
                      "headings", "headings_ok", "terms", "terms_ok"):
                g[k] += c[k]
                per_gen["ALL"][k] += c[k]
            g["pages"] += 1
            if args.show and name == "ours" and rec["path"].find(args.show) >= 0:
                print(md)
                print("LEAKED:", c["leaked_lines"])
        m = prf(ev, pairs)
        summary = {"pages": len(records), "f1": round(m["f1"], 4),
                   "precision": round(m["precision"], 4), "recall": round(m["recall"], 4),
                   "median_ms": round(median(times), 2)}
        for gen, g in sorted(per_gen.items()):
            summary[gen] = {
                "leaked_pct": round(100 * g["leaked"] / max(g["lines"], 1), 2),
                "code_exact_pct": round(100 * g["codes_ok"] / max(g["codes"], 1), 1),
                "tables_pct": round(100 * g["tables_ok"] / max(g["tables"], 1), 1),
                "headings_pct": round(100 * g["headings_ok"] / max(g["headings"], 1), 1),
                "terms_pct": round(100 * g["terms_ok"] / max(g["terms"], 1), 1),
                "codes": int(g["codes"]), "tables": int(g["tables"])}
        results[name] = summary
        print(name, json.dumps({k: v for k, v in summary.items() if not isinstance(v, dict)}))
        for gen in sorted(per_gen):
            print(f"  {gen:<22} {json.dumps(summary[gen])}")
    finish(results, args.json)


if __name__ == "__main__":
    main()
