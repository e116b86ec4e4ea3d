"""Shared pieces of the conversion quality benchmarks (bench_articles, bench_docs).

Markdown is judged the way a reader sees it: rendered with markdown-it-py (CommonMark + GFM
tables), then read back as text, one line per block.  Text is scored with the article
benchmark's own ``evaluate.py`` (4-gram shingle precision/recall/F1), loaded from the
dataset directory so that the figures are that scorer's.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lxml import etree
from markdown_it import MarkdownIt

DATASET = Path(__file__).resolve().parents[2] / "shared/datasets/article-extraction-benchmark"
if not DATASET.exists():
    DATASET = Path("/work/shared/datasets/article-extraction-benchmark")

_md = MarkdownIt("commonmark").enable("table").enable("strikethrough")
_BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "tr", "blockquote", "dt",
           "dd", "table", "ul", "ol", "div", "hr"}


def scorer() -> Any:
    """The benchmark's own evaluate.py as a module."""
    spec = importlib.util.spec_from_file_location("aeb_evaluate", DATASET / "evaluate.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def md_html(markdown: str) -> str:
    return _md.render(markdown)


def md_tokens(markdown: str) -> list[Any]:
    return _md.parse(markdown)


def html_text(html: str) -> str:
    """Text of rendered HTML, one line per block element."""
    if not html.strip():
        return ""
    root = etree.fromstring(f"<div>{html}</div>", etree.HTMLParser())
    out: list[str] = []

    def walk(el: Any) -> None:
        block = el.tag in _BLOCKS
        if block:
            out.append("\n")
        if el.tag == "td" or el.tag == "th":
            out.append(" ")
        if el.text:
            out.append(el.text)
        for c in el:
            walk(c)
            if c.tail:
                out.append(c.tail)
        if block:
            out.append("\n")

    walk(root)
    return "\n".join(ln.strip() for ln in "".join(out).split("\n") if ln.strip())


def md_text(markdown: str) -> str:
    """What a reader of the rendered markdown sees, as text."""
    return html_text(md_html(markdown))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the CPU milliseconds it took (this process only: steadier than wall time
    on a shared machine)."""
    t = time.process_time()
    out = fn()
    return out, (time.process_time() - t) * 1000


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def prf(scorer_mod: Any, pairs: list[tuple[str, str]]) -> dict[str, float]:
    """Benchmark-style P/R/F1 over (truth, prediction) pairs (per-page normalised)."""
    tfs = [scorer_mod.string_shingle_matching(true=t, pred=p) for t, p in pairs]
    return scorer_mod.metrics_from_tp_fp_fns(tfs)


def finish(results: dict[str, Any], json_path: Path | None) -> None:
    """Print our median time against trafilatura's; write the results when asked."""
    if "ours" in results and "trafilatura" in results:
        ratio = results["ours"]["median_ms"] / max(results["trafilatura"]["median_ms"], 1e-9)
        print(f"median ms ratio ours/trafilatura: {ratio:.2f}")
    if json_path:
        json_path.write_text(json.dumps(results, indent=2))
