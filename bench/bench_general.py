"""General web pages (``bench/general_corpus.py``): ours beside trafilatura, ROUGE-LSum F1.

Both tools' markdown is read back as text the same way (rendered with markdown-it, one line
per block: ``quality.md_text``); trafilatura is asked for markdown with tables.  Scored with
``bench/rouge.py`` (rouge-score's ``rougeLsum``, lines as sentences) against each page's
truth; F1 is the mean over pages, as those benchmarks report it.  "Empty" is a page with no
text out (ours: under the worker's ``min_content_chars``, 100, as the worker would skip it).
Figures per source and split (dev / held out), and per page type of the 2026 set.

    python -m bench.bench_general [--workdir /tmp/wt19-general] [--only ours]
                                  [--worst 20] [--split dev] [--show KEY] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.general_corpus import MIRRORS, build
from bench.quality import finish, md_text, median, timed
from bench.rouge import rouge_lsum

MIN_CONTENT_CHARS = 100


def ours(html: str, url: str) -> str:
    from sitemap_crawler.convert.markdown import html_to_markdown
    page = html_to_markdown(html, url)
    return "" if page.text_chars < MIN_CONTENT_CHARS else md_text(page.markdown)


def trafilatura_text(html: str, url: str) -> str:
    import trafilatura
    md = trafilatura.extract(html, url=url, output_format="markdown", include_tables=True,
                             include_comments=False)
    return md_text(md or "")


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/wt19-general"))
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--per-source", type=int, default=300)
    ap.add_argument("--only", choices=["ours", "trafilatura"])
    ap.add_argument("--split", choices=["dev", "held"], help="only these pages")
    ap.add_argument("--worst", type=int, default=0, help="list the N worst pages of each tool")
    ap.add_argument("--show", help="print each tool's text of the page with this key")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    records = build(args.workdir, args.mirrors, args.per_source)
    if args.split:
        records = [r for r in records if r["held_out"] == (args.split == "held")]
    tools = {"ours": ours, "trafilatura": trafilatura_text}
    if args.only:
        tools = {args.only: tools[args.only]}
    results: dict[str, Any] = {}
    for name, fn in tools.items():
        fn("<html><body><p>warm</p></body></html>", "https://example.com/")
        groups: dict[str, list[tuple[float, float, float, bool]]] = defaultdict(list)
        times, rows = [], []
        for rec in records:
            html = Path(rec["path"]).read_text(encoding="utf-8")
            text, ms = timed(lambda fn=fn, html=html, url=rec["url"]: fn(html, url))
            times.append(ms)
            p, r, f = rouge_lsum(rec["truth"], text)
            row = (p, r, f, not text.strip())
            split = "held" if rec["held_out"] else "dev"
            for g in ("ALL", split, f"{rec['source']}/{split}", rec["source"],
                      f"type:{rec['kind']}" if rec["source"] == "wceb-2026" else ""):
                if g:
                    groups[g].append(row)
            rows.append((f, p, r, rec["source"], rec["key"], rec["kind"], rec["url"]))
            if args.show and args.show == rec["key"]:
                print(f"--- {name} ---\n{text}\n--- truth ---\n{rec['truth']}")
        summary: dict[str, Any] = {"median_ms": round(median(times), 2),
                                   "per_page": {f"{s}/{k}": round(f, 4)
                                                for f, _, _, s, k, _, _ in rows}}
        for g, rs in sorted(groups.items()):
            summary[g] = {"pages": len(rs), "f1": _mean([x[2] for x in rs]),
                          "precision": _mean([x[0] for x in rs]),
                          "recall": _mean([x[1] for x in rs]),
                          "empty_pct": round(100 * sum(x[3] for x in rs) / len(rs), 1)}
        results[name] = summary
        print(name, f"median_ms={summary['median_ms']}")
        for g in sorted(groups):
            print(f"  {g:<24} {json.dumps(summary[g])}")
        for f, p, r, source, key, kind, url in sorted(rows)[:args.worst]:
            print(f"  f1={f:.3f} p={p:.3f} r={r:.3f} {source}/{key} {kind} {url}")
    if len(results) == 2:
        o, t = results["ours"], results["trafilatura"]
        print("\n| group | pages | F1 ours | F1 traf. | P ours / traf. | R ours / traf. | "
              "empty % ours / traf. |")
        print("| --- " * 7 + "|")
        for g in sorted(k for k in o if isinstance(o[k], dict) and k != "per_page"):
            a, b = o[g], t[g]
            print(f"| {g} | {a['pages']} | {a['f1']:.3f} | {b['f1']:.3f} | "
                  f"{a['precision']:.3f} / {b['precision']:.3f} | "
                  f"{a['recall']:.3f} / {b['recall']:.3f} | {a['empty_pct']} / {b['empty_pct']} |")
    finish(results, args.json)


if __name__ == "__main__":
    main()
