"""Article pages: the public article-extraction-benchmark, ours beside trafilatura, one run.

Reads the dataset from ../shared/datasets/article-extraction-benchmark (181 news/blog pages,
ground truth ``articleBody``) and scores both extractors with the dataset's own evaluate.py.
Our markdown is rendered with markdown-it and read back as text, so markup never counts.
"Skipped" is a page whose ``text_chars`` is under the worker's default ``min_content_chars``
(100): the worker would not write it.  Times are CPU-bound medians per page (parse included).

    python -m bench.bench_articles [--only ours] [--worst 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.quality import DATASET, finish, md_text, median, prf, scorer, timed

MIN_CONTENT_CHARS = 100


def load() -> list[tuple[str, str, str, str]]:
    truth = json.loads((DATASET / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for key, item in sorted(truth.items()):
        raw = gzip.decompress((DATASET / "html" / f"{key}.html.gz").read_bytes())
        pages.append((key, item.get("url") or "https://example.com/", item["articleBody"],
                      raw.decode("utf-8", errors="replace")))
    return pages


def ours(html: str, url: str) -> tuple[str, bool, str]:
    from sitemap_crawler.convert.markdown import html_to_markdown
    page = html_to_markdown(html, url)
    return md_text(page.markdown), page.text_chars < MIN_CONTENT_CHARS, page.root


def trafilatura_text(html: str, url: str) -> tuple[str, bool, str]:
    import trafilatura
    text = trafilatura.extract(html, url=url, include_tables=True, include_comments=False)
    return text or "", not text, ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["ours", "trafilatura"])
    ap.add_argument("--worst", type=int, default=0, help="list the N worst pages of ours")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    pages = load()
    ev = scorer()
    tools = {"ours": ours, "trafilatura": trafilatura_text}
    if args.only:
        tools = {args.only: tools[args.only]}
    results = {}
    for name, fn in tools.items():
        fn(pages[0][3], pages[0][1])  # warm imports
        pairs, times, empty, rows = [], [], 0, []
        for key, url, truth, html in pages:
            (text, skipped, root), ms = timed(lambda fn=fn, html=html, url=url: fn(html, url))
            if skipped:
                empty += 1
                text = ""
            pairs.append((truth, text))
            times.append(ms)
            rows.append((key, url, root, truth, text))
        m = prf(ev, pairs)
        results[name] = {"pages": len(pages), "f1": round(m["f1"], 4),
                         "precision": round(m["precision"], 4), "recall": round(m["recall"], 4),
                         "empty_or_skipped": empty, "median_ms": round(median(times), 2)}
        print(name, json.dumps(results[name]))
        if name == "ours" and args.worst:
            scored = []
            for key, url, root, truth, text in rows:
                tp, fp, fn_ = ev.string_shingle_matching(true=truth, pred=text)
                scored.append((tp, fp, fn_, key, url, root))
            for tp, fp, fn_, key, url, root in sorted(scored)[:args.worst]:
                print(f"  tp={tp:.2f} fp={fp:.2f} fn={fn_:.2f} {root:12} {key[:12]} {url}")
    finish(results, args.json)


if __name__ == "__main__":
    main()
