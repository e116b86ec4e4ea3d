"""Real generated docs pages of many generators (``bench/generator_corpus.py``): ours beside
trafilatura, per generator, in one run.

Scored as bench_docs scores: text P/R/F1 with the article benchmark's evaluate.py against the
content element's text, leaked lines, code blocks exact, tables, headings at their level;
ms/page is the median CPU time of the conversion (parse included).

    python -m bench.bench_generators [--workdir /tmp/sitemap-crawler-generators]
                                     [--per-gen 20] [--only ours] [--show PATH-PART]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_docs import check, converters
from bench.generator_corpus import build
from bench.quality import finish, median, prf, scorer, timed

_KEYS = ("lines", "leaked", "codes", "codes_ok", "tables", "tables_ok", "headings",
         "headings_ok")


def _pct(ok: float, n: float) -> float:
    return round(100 * ok / n, 1) if n else 100.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/sitemap-crawler-generators"))
    ap.add_argument("--per-gen", type=int, default=20)
    ap.add_argument("--only", choices=["ours", "trafilatura"])
    ap.add_argument("--generator", action="append", help="only these generators")
    ap.add_argument("--show", help="print our markdown of the pages whose path has this")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    records = build(args.workdir, args.per_gen,
                    only=set(args.generator) if args.generator else None)
    ev = scorer()
    results: dict[str, Any] = {}
    for name, fn in converters(args.only).items():
        per_gen: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
        times, empty = [], 0
        for rec in records:
            html = Path(rec["path"]).read_text(encoding="utf-8", errors="replace")
            md, ms = timed(lambda fn=fn, html=html: fn(html))
            times.append(ms)
            empty += not md.strip()
            c = check(md, rec["truth"])
            gen = rec["generator"]
            pairs[gen].append((rec["truth"]["text"], c["text"]))
            pairs["ALL"].append((rec["truth"]["text"], c["text"]))
            for k in _KEYS:
                per_gen[gen][k] += c[k]
                per_gen["ALL"][k] += c[k]
            per_gen[gen]["pages"] += 1
            per_gen["ALL"]["pages"] += 1
            if args.show and name == "ours" and args.show in rec["path"]:
                print(md)
                print("LEAKED:", c["leaked_lines"])
        summary: dict[str, Any] = {"pages": len(records), "empty": empty,
                                   "median_ms": round(median(times), 2)}
        for gen in sorted(per_gen):
            g = per_gen[gen]
            m = prf(ev, pairs[gen])
            summary[gen] = {"pages": int(g["pages"]), "f1": round(m["f1"], 3),
                            "precision": round(m["precision"], 3),
                            "recall": round(m["recall"], 3),
                            "leaked_pct": round(100 * g["leaked"] / max(g["lines"], 1), 2),
                            "code_exact_pct": _pct(g["codes_ok"], g["codes"]),
                            "tables_pct": _pct(g["tables_ok"], g["tables"]),
                            "headings_pct": _pct(g["headings_ok"], g["headings"]),
                            "codes": int(g["codes"]), "tables": int(g["tables"])}
        results[name] = summary
        print(name, json.dumps({k: v for k, v in summary.items() if not isinstance(v, dict)}))
        for gen in sorted(per_gen):
            print(f"  {gen:<20} {json.dumps(summary[gen])}")
    if len(results) == 2:
        print("\n| generator | pages | F1 ours | F1 traf. | code ours | code traf. | "
              "tables ours | tables traf. | headings ours | headings traf. | "
              "leaked ours | leaked traf. |")
        print("| --- " * 12 + "|")
        o, t = results["ours"], results["trafilatura"]
        for gen in sorted(k for k in o if isinstance(o[k], dict)):
            a, b = o[gen], t[gen]
            print(f"| {gen} | {a['pages']} | {a['f1']:.3f} | {b['f1']:.3f} | "
                  f"{a['code_exact_pct']} | {b['code_exact_pct']} | {a['tables_pct']} | "
                  f"{b['tables_pct']} | {a['headings_pct']} | {b['headings_pct']} | "
                  f"{a['leaked_pct']} | {b['leaked_pct']} |")
    finish(results, args.json)


if __name__ == "__main__":
    main()
