"""Two source trees, one conversion: is the output the same, and how much CPU does each take?

For speed work on the converter, where the markdown must not change by a byte.  Run each
subcommand from the root of the tree it measures, with ``PYTHONPATH`` set to that root, and
alternate the trees so that the machine's load hits both alike:

    python -m bench.convert_ab dump OUT.json --site DIR [--generators J] [--general J]
    python -m bench.convert_ab compare BEFORE.json AFTER.json
    python -m bench.convert_ab time --site DIR [--pages 200] [--rounds 5]

``dump`` converts every page of a bench/site.py site (and of the generator and general
corpora, given their cached record lists: bench/generator_corpus.py, bench/general_corpus.py)
and writes every field of each ``Page``; ``compare`` names the pages whose fields differ.
``time`` prints CPU ms a page (process time; min, median and max over the rounds) of the
content choice, the renderer, both, and all of ``html_to_markdown`` on the site's pages.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # also as a script
from bench.bench_convert import cpu_ms_rounds

_URL = "https://docs.example.com/guide/page.html"


def _pages(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(path, url) of every page to convert."""
    out = []
    if args.generators:
        out += [(r["path"], _URL) for r in json.loads(Path(args.generators).read_text())]
    if args.general:
        out += [(r["path"], r["url"]) for r in json.loads(Path(args.general).read_text())]
    out += [(str(p), _URL) for p in sorted(Path(args.site).rglob("*.html"))]
    return out


def dump(args: argparse.Namespace) -> None:
    from sitemap_crawler.convert.markdown import html_to_markdown

    out = {}
    for path, url in _pages(args):
        html = Path(path).read_text(encoding="utf-8", errors="replace")
        out[path] = dataclasses.asdict(html_to_markdown(html, url))
    Path(args.out).write_text(json.dumps(out))
    print(f"{len(out)} pages converted")


def compare(args: argparse.Namespace) -> None:
    a = json.loads(Path(args.before).read_text())
    b = json.loads(Path(args.after).read_text())
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    print(f"{len(a)} / {len(b)} pages, {len(differ)} differ")
    for k in differ[:20]:
        fields = [f for f in (a.get(k) or b.get(k) or {}) if (a.get(k) or {}).get(f) !=
                  (b.get(k) or {}).get(f)]
        print(f"  {k}: {', '.join(fields)}")
    if differ:
        sys.exit(1)


def timing(args: argparse.Namespace) -> None:
    from sitemap_crawler.convert import content, render
    from sitemap_crawler.convert import markdown as m

    files = sorted(Path(args.site).rglob("*.html"))
    step = max(1, len(files) // args.pages)
    pages = [f.read_text(encoding="utf-8") for f in files[::step][:args.pages]]
    docs = [m._parse(p) for p in pages]

    def rendered(ch: Any) -> str:
        return render.Renderer(_URL, whole_body=ch.whole_body,
                               drop_elements=ch.widgets).markdown(ch.root, ch.before)

    choices = [content.choose(d) for d in docs]
    rows: list[tuple[str, Callable[[Any], object], list[Any]]] = [
        ("content.choose", content.choose, docs),
        ("render.Renderer", rendered, choices),
        ("choose + render", lambda d: rendered(content.choose(d)), docs),
        ("html_to_markdown (parse to hash)", lambda p: m.html_to_markdown(p, _URL), pages),
    ]
    print(f"{len(pages)} pages, CPU ms a page over {args.rounds} rounds: min / median / max")
    for name, fn, items in rows:
        r = cpu_ms_rounds(fn, items, args.rounds)
        print(f"  {name:<34} {min(r):6.3f} {statistics.median(r):6.3f} {max(r):6.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("--site", required=True)
    d.add_argument("--generators", help="records of bench/generator_corpus.py (json)")
    d.add_argument("--general", help="records of bench/general_corpus.py (json)")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    t = sub.add_parser("time")
    t.add_argument("--site", required=True)
    t.add_argument("--pages", type=int, default=200)
    t.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    {"dump": dump, "compare": compare, "time": timing}[args.cmd](args)


if __name__ == "__main__":
    main()
