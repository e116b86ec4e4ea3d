"""What a site template would add: blocks repeated across a generator's pages left out.

An experiment for the design in ROADMAP ("the site teaches its own template"), run outside
the converter: each page's text blocks (an element's own text, 20+ characters, outside
headings, code and tables, holding no block) are fingerprinted by tag and text; for each page
the template is the fingerprints found on at least half of the *other* pages of its
generator (3 at least), so the page itself is held out; those blocks are removed from the
parsed page before it is converted ("with"), or only those before the content root's first
heading or after its last text ("edges").  Scored as bench_generators scores (text F1,
leaked lines), without, with and edges.

    python -m bench.bench_template [--workdir /tmp/sitemap-crawler-generators]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_docs import check
from bench.generator_corpus import _drop, build
from bench.quality import prf, scorer

_SKIP = "ancestor-or-self::h1|ancestor-or-self::h2|ancestor-or-self::h3|ancestor-or-self::h4" \
        "|ancestor-or-self::pre|ancestor-or-self::code|ancestor-or-self::table"


_INLINE = frozenset({"a", "em", "strong", "b", "i", "u", "code", "span", "small", "sup", "sub",
                     "abbr", "cite", "q", "mark", "time", "br", "img", "kbd", "var"})


def blocks(doc: Any) -> dict[str, list[Any]]:
    """Fingerprint -> elements: every block with 20+ characters of its own text and no
    block inside it."""
    out: dict[str, list[Any]] = defaultdict(list)
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        own = " ".join(" ".join([el.text or ""] + [c.tail or "" for c in el]).split())
        if len(own) < 20 or el.xpath(_SKIP):
            continue
        if any(isinstance(c.tag, str) and c.tag not in _INLINE for c in el):
            continue  # a block holding blocks: removing it would take theirs too
        out[hashlib.sha1(f"{el.tag}|{own}".encode()).hexdigest()[:16]].append(el)
    return out


def _between_headings(doc: Any) -> set[Any]:
    """Elements after the content root's first heading and before its last block: the
    page's own entries ("edges" mode keeps template blocks there)."""
    from sitemap_crawler.convert.content import choose
    root = choose(doc).root
    order = list(root.iter())
    heads = [i for i, el in enumerate(order) if el.tag in ("h1", "h2", "h3", "h4", "h5", "h6")]
    if not heads:
        return set()
    last = max(i for i, el in enumerate(order) if (el.text or "").strip())
    return set(order[heads[0]:last + 1])


def _prf(ev: Any, pairs: list[tuple[str, str]]) -> dict[str, float]:
    """prf, with every page emptied scored 0 (the scorer averages only non-empty pages)."""
    if not any(text.strip() for _, text in pairs):
        return {"f1": 0.0, "precision": 0.0, "recall": 0.0}
    return prf(ev, pairs)


def main() -> None:
    from sitemap_crawler.convert.markdown import html_to_markdown, parse_html
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/sitemap-crawler-generators"))
    args = ap.parse_args()
    ev = scorer()
    by_gen: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in build(args.workdir):
        by_gen[rec["generator"]].append(rec)
    modes = ("without", "with", "edges")
    totals: dict[str, dict[str, list[Any]]] = {m: defaultdict(list) for m in modes}
    for gen, recs in sorted(by_gen.items()):
        htmls = [Path(r["path"]).read_text(encoding="utf-8", errors="replace") for r in recs]
        prints = [set(blocks(parse_html(h))) for h in htmls]
        seen = Counter(f for p in prints for f in p)
        row = {}
        for mode in modes:
            pairs, leaked, lines, removed = [], 0, 0, 0
            for i, (rec, html) in enumerate(zip(recs, htmls, strict=True)):
                doc = parse_html(html)
                if mode != "without" and len(recs) >= 4:
                    others = len(recs) - 1
                    inner = _between_headings(doc) if mode == "edges" else set()
                    for fp, els in blocks(doc).items():
                        if seen[fp] - (fp in prints[i]) >= max(3, others / 2):
                            for el in els:
                                if el.getparent() is not None and el not in inner:
                                    _drop(el)  # (its tail is the parent's text: kept)
                                    removed += 1
                page = html_to_markdown(html, "https://docs.example.com/a/b.html", doc=doc)
                c = check(page.markdown, rec["truth"])
                pairs.append((rec["truth"]["text"], c["text"]))
                leaked, lines = leaked + c["leaked"], lines + c["lines"]
            m = _prf(ev, pairs)
            totals[mode]["pairs"] += pairs
            totals[mode]["leaked"].append((leaked, lines))
            row[mode] = (round(m["f1"], 3), round(100 * leaked / max(lines, 1), 2), removed)
        print(f"{gen:<24} F1 {row['without'][0]} -> {row['with'][0]} / {row['edges'][0]}, "
              f"leaked {row['without'][1]} -> {row['with'][1]} / {row['edges'][1]} %, "
              f"blocks removed {row['with'][2]} / {row['edges'][2]}")
    for mode, t in totals.items():
        m = _prf(ev, t["pairs"])
        leaked = sum(a for a, _ in t["leaked"]) / max(sum(b for _, b in t["leaked"]), 1)
        print(f"ALL {mode}: F1 {m['f1']:.3f} (P {m['precision']:.3f}, R {m['recall']:.3f}), "
              f"leaked {100 * leaked:.2f} %")


if __name__ == "__main__":
    main()
