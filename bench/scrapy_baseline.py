"""The tools users would pick instead, measured on the same machine and the same site.

- Scrapy's ``SitemapSpider`` with an item pipeline that runs
  ``markdownify.markdownify(response.text)`` and writes one ``.md`` file per page (what a user
  builds in an afternoon), or writes the raw HTML (``--no-markdown``), optionally through
  ``HttpCacheMiddleware`` with ``RFC2616Policy`` (``--httpcache DIR``) for re-crawls;
- ultimate-sitemap-parser (``usp.tree.sitemap_tree_for_homepage``) for the 1,000,000-URL
  sitemap-discovery benchmark.

Each measured run is one child process; the parent (one per measurement, so nothing else is
mixed in) reports wall seconds and the child's peak RSS from
``resource.getrusage(RUSAGE_CHILDREN)``, as one JSON line on stdout.

    python -m bench.scrapy_baseline crawl --base http://127.0.0.1:PORT --out DIR [--no-markdown]
                                          [--httpcache CACHE_DIR]
    python -m bench.scrapy_baseline usp --base http://127.0.0.1:PORT
    python -m bench.scrapy_baseline all [--workdir DIR] [--pages 5000]   # everything, with nginx

Scrapy and ultimate-sitemap-parser are not dependencies of sitemap-crawler; ``all`` installs
them from PyPI with pip when missing (``pip install scrapy ultimate-sitemap-parser``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parents[1]
PIP_PACKAGES = {"scrapy": "scrapy", "usp": "ultimate-sitemap-parser"}


def ensure_installed(modules: tuple[str, ...] = ("scrapy", "usp")) -> None:
    """pip-install the comparison tools if missing (the bench's own install step)."""
    missing = [PIP_PACKAGES[m] for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print(f"installing {' '.join(missing)} from PyPI with pip ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True)


def compile_ours() -> None:
    """Byte-compile sitemap_crawler, as pip does when it installs a wheel.  Scrapy's modules
    were compiled at its install; an editable checkout run with PYTHONDONTWRITEBYTECODE set
    (this bench machine) compiled ours from source at every run: 0.1-0.17 s of a 14 s crawl,
    install work counted as crawl work."""
    import compileall

    compileall.compile_dir(REPO / "sitemap_crawler", quiet=1)


# --------------------------------------------------------------------------------------------
# Scrapy side (runs in the child process)
# --------------------------------------------------------------------------------------------
def output_path(out_dir: Path, url: str, suffix: str) -> Path:
    """``http://host/guide/x.html`` -> ``out_dir/guide/x.md`` (``/`` -> ``index.md``)."""
    rel = unquote(urlsplit(url).path).lstrip("/") or "index.html"
    if rel.endswith("/"):
        rel += "index.html"
    return (out_dir / rel).with_suffix(suffix)


class MarkdownPipeline:
    """Converts every page with markdownify and writes it, as a Scrapy user would."""

    def __init__(self, out_dir: str, markdown: bool) -> None:
        self.out_dir = Path(out_dir)
        self.markdown = markdown
        self.written = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> MarkdownPipeline:
        pipe = cls(crawler.settings["BENCH_OUT_DIR"], crawler.settings.getbool("BENCH_MARKDOWN"))
        crawler.bench_pipeline = pipe
        return pipe

    def process_item(self, item: dict, spider: Any = None) -> dict:
        if self.markdown:
            import markdownify

            path = output_path(self.out_dir, item["url"], ".md")
            data = markdownify.markdownify(item["text"]).encode()
        else:
            path = output_path(self.out_dir, item["url"], ".html")
            data = item["body"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.written += 1
        return {"url": item["url"]}  # keep the big body out of Scrapy's item stats


def _scrapy_child(cfg: dict) -> None:
    from scrapy.crawler import CrawlerProcess
    from scrapy.spiders import SitemapSpider

    markdown = cfg["markdown"]

    def item(response: Any) -> dict:
        if markdown and cfg.get("main_only"):
            # the same work as ours: the main content, not the navigation around it
            return {"url": response.url, "text": response.css("main").get() or response.text}
        if markdown:
            return {"url": response.url, "text": response.text}
        return {"url": response.url, "body": response.body}

    class DocsSpider(SitemapSpider):
        name = "docs"
        sitemap_urls = (cfg["base"] + "/sitemap.xml",)

        def parse(self, response: Any) -> Any:
            yield item(response)

    spider: type = DocsSpider
    if cfg.get("follow_links"):
        # No sitemap: CrawlSpider from the home page, every <a>/<area> link on the host
        # followed (no depth limit; Scrapy's dupefilter fetches each URL once).
        from urllib.parse import urlsplit

        from scrapy.linkextractors import LinkExtractor
        from scrapy.spiders import CrawlSpider, Rule

        # Scrapy compares allow_domains with the URL's netloc, port included
        # (scrapy.utils.url.url_is_from_any_domain): "127.0.0.1" alone matches nothing here.
        host = urlsplit(cfg["base"]).netloc

        class LinksSpider(CrawlSpider):
            name = "docs-links"
            start_urls = (cfg["base"] + "/",)
            rules = (Rule(LinkExtractor(allow_domains=[host]), callback="parse_page",
                          follow=True),)

            def parse_start_url(self, response: Any, **kwargs: Any) -> Any:
                yield item(response)  # the home page is a page too

            def parse_page(self, response: Any) -> Any:
                yield item(response)

        spider = LinksSpider

    settings: dict[str, Any] = {
        "CONCURRENT_REQUESTS": cfg["concurrency"],
        "CONCURRENT_REQUESTS_PER_DOMAIN": cfg["concurrency"],
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "USER_AGENT": "scrapy-baseline (+benchmark on 127.0.0.1)",
        "ITEM_PIPELINES": {"bench.scrapy_baseline.MarkdownPipeline": 300},
        "BENCH_OUT_DIR": cfg["out"],
        "BENCH_MARKDOWN": markdown,
    }
    if cfg.get("httpcache"):
        settings.update({
            "HTTPCACHE_ENABLED": True,
            "HTTPCACHE_POLICY": "scrapy.extensions.httpcache.RFC2616Policy",
            "HTTPCACHE_DIR": str(Path(cfg["httpcache"]).resolve()),
            "HTTPCACHE_EXPIRATION_SECS": 0,
        })
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(spider)
    process.crawl(crawler)
    t0 = time.perf_counter()
    process.start()
    seconds = time.perf_counter() - t0
    stats = {k: v for k, v in crawler.stats.get_stats().items()
             if isinstance(v, int | float | str)}
    pipe = getattr(crawler, "bench_pipeline", None)
    Path(cfg["stats_file"]).write_text(json.dumps({
        "crawl_seconds": seconds, "written": pipe.written if pipe else 0, "stats": stats}))


def _usp_child(cfg: dict) -> None:
    import logging

    from usp.tree import sitemap_tree_for_homepage

    logging.getLogger("usp").setLevel(logging.WARNING)
    t0 = time.perf_counter()
    tree = sitemap_tree_for_homepage(cfg["base"] + "/")
    urls = sum(1 for _ in tree.all_pages())
    Path(cfg["stats_file"]).write_text(json.dumps({"urls": urls,
                                                   "parse_seconds": time.perf_counter() - t0}))


# --------------------------------------------------------------------------------------------
# Parent side: one measured child per process
# --------------------------------------------------------------------------------------------
def _run_child(kind: str, cfg: dict) -> tuple[float, float, float, dict]:
    """(wall seconds, peak RSS MiB, CPU seconds, child's stats) for one child run.

    CPU seconds (user + system) matter on a shared machine: wall time grows when other
    processes compete for the cores, CPU time much less."""
    stats_file = Path(cfg["stats_file"])
    stats_file.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bench.scrapy_baseline", kind, json.dumps(cfg)],
                          cwd=REPO, env=env, check=False)
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mib = usage.ru_maxrss / 1024  # KiB on Linux
    if proc.returncode != 0 or not stats_file.exists():
        raise RuntimeError(f"{kind} child failed with exit code {proc.returncode}")
    return wall, peak_mib, usage.ru_utime + usage.ru_stime, json.loads(stats_file.read_text())


def crawl(base: str, out: Path, *, markdown: bool = True, httpcache: Path | None = None,
          concurrency: int = 32, follow_links: bool = False, main_only: bool = False) -> dict:
    """One Scrapy run against ``base``; returns the figures (call in a fresh process)."""
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cfg = {"base": base.rstrip("/"), "out": str(out.resolve()), "markdown": markdown,
           "httpcache": str(httpcache) if httpcache else None, "concurrency": concurrency,
           "follow_links": follow_links, "main_only": main_only,
           "stats_file": str(out.parent / f".{out.name}.stats.json")}
    wall, rss, cpu, child = _run_child("_scrapy-child", cfg)
    st = child["stats"]
    files = sum(1 for p in out.rglob("*") if p.is_file())
    pages = child["written"]
    return {
        "tool": ("scrapy+markdownify" + (" <main>" if main_only else "") if markdown
                 else "scrapy-raw-html")
        + (" CrawlSpider" if follow_links else ""),
        "pages": pages, "files": files,
        "seconds": round(wall, 2), "pages_per_s": round(pages / wall, 1),
        "crawl_seconds": round(child["crawl_seconds"], 2), "cpu_seconds": round(cpu, 2),
        "peak_rss_mib": round(rss, 1), "loadavg_1m": round(os.getloadavg()[0], 2),
        # Scrapy's downloader stats sit outside the cache: they count cache hits as requests
        # and see a revalidated 304 as the cached 200 (httpcache/revalidate counts those).
        "scrapy_requests": st.get("downloader/request_count", 0),
        "scrapy_responses_200": st.get("downloader/response_status_count/200", 0),
        "httpcache": {k.split("/", 1)[1]: v for k, v in sorted(st.items())
                      if k.startswith("httpcache/")} if httpcache else None,
        "scrapy": _version("scrapy"),
    }


def run_usp(base: str, workdir: Path) -> dict:
    """ultimate-sitemap-parser over the served sitemap index (call in a fresh process)."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = {"base": base.rstrip("/"), "stats_file": str(workdir / ".usp.stats.json")}
    wall, rss, cpu, child = _run_child("_usp-child", cfg)
    return {"tool": "ultimate-sitemap-parser", "urls": child["urls"], "seconds": round(wall, 2),
            "parse_seconds": round(child["parse_seconds"], 2),
            "urls_per_s": round(child["urls"] / wall), "cpu_seconds": round(cpu, 2),
            "peak_rss_mib": round(rss, 1), "loadavg_1m": round(os.getloadavg()[0], 2),
            "usp": _version("ultimate-sitemap-parser")}


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _measure_in_fresh_process(args: list[str]) -> dict:
    """Run ``python -m bench.scrapy_baseline ARGS`` so RUSAGE_CHILDREN covers one child only."""
    out = subprocess.run([sys.executable, "-m", "bench.scrapy_baseline", *args], cwd=REPO,
                         check=True, capture_output=True, text=True)
    sys.stderr.write(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_all(workdir: Path, pages: int, big_files: int, per_file: int, only: set[str]) -> None:
    """Build the bench site, serve it with nginx, and measure every comparison."""
    from bench.nginx import Nginx, nginx_serving
    from bench.site import build_site, make_big_sitemap, mutate, write_sitemaps

    ensure_installed()
    workdir.mkdir(parents=True, exist_ok=True)
    results = workdir / "results.jsonl"

    def emit(rec: dict) -> None:
        line = json.dumps(rec)
        print(line, flush=True)
        with results.open("a") as f:
            f.write(line + "\n")

    emit({"env": {"python": platform.python_version(), "cpus": os.cpu_count(),
                  "machine": platform.machine(), "scrapy": _version("scrapy"),
                  "usp": _version("ultimate-sitemap-parser"),
                  "markdownify": _version("markdownify"), "pages": pages,
                  "time": time.strftime("%Y-%m-%dT%H:%M:%S")}})
    site = workdir / "site"
    if only & {"md", "raw", "incr"}:
        shutil.rmtree(site, ignore_errors=True)
        t0 = time.perf_counter()
        man = build_site(site, pages)
        print(f"built {len(man['urls'])} pages ({man['bytes'] / 1e6:.1f} MB) in "
              f"{time.perf_counter() - t0:.1f}s", file=sys.stderr)
    if only & {"md", "raw"}:
        with nginx_serving(site) as base:
            write_sitemaps(site, base)
            if "md" in only:
                emit({"bench": "full-crawl", **_measure_in_fresh_process(
                    ["crawl", "--base", base, "--out", str(workdir / "out-scrapy-md")])})
            if "raw" in only:
                emit({"bench": "full-crawl", **_measure_in_fresh_process(
                    ["crawl", "--base", base, "--out", str(workdir / "out-scrapy-raw"),
                     "--no-markdown"])})
    if "incr" in only:
        # Three server behaviours, because Scrapy's RFC2616Policy reacts very differently:
        # none (nginx default), "no-cache" (the brief's choice) and "max-age=0".
        for cc in ("none", "no-cache", "max-age=0"):
            shutil.rmtree(site, ignore_errors=True)
            build_site(site, pages)
            cache = workdir / "scrapy-httpcache"
            shutil.rmtree(cache, ignore_errors=True)
            out = workdir / "out-scrapy-incr"
            server = Nginx(site, cache_control=None if cc == "none" else cc, access_log=True)
            try:
                base = server.start()
                write_sitemaps(site, base)
                args = ["crawl", "--base", base, "--out", str(out), "--httpcache", str(cache)]
                rec = _measure_in_fresh_process(args)
                emit({"bench": "incremental-pass1-fill-cache", "cache_control": cc,
                      "server": server.status_counts(reset=True), **rec})
                time.sleep(1.1)  # a later second, so mtime-based ETags cannot tie
                changed = mutate(site, 0.05)
                rec = _measure_in_fresh_process(args)
                emit({"bench": "incremental-pass2-5pct-changed", "cache_control": cc,
                      "changed_pages": len(changed),
                      "changed_pages_with_new_content": _fresh_outputs(site, out, base, changed),
                      "server": server.status_counts(reset=True), **rec})
            finally:
                server.close()
    if "usp" in only:
        big = workdir / "big"
        with nginx_serving(big if big.exists() else _mkdir(big)) as base:
            t0 = time.perf_counter()
            make_big_sitemap(big, big_files, per_file, base_url=base)
            print(f"wrote {big_files * per_file:,} URLs in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr)
            emit({"bench": "sitemap-1M", "sitemap_urls": big_files * per_file,
                  **_measure_in_fresh_process(["usp", "--base", base])})
    print(f"results appended to {results}", file=sys.stderr)


def _fresh_outputs(site: Path, out: Path, base: str, changed: list[str]) -> int:
    """How many changed pages' markdown carries their new "Last updated" date (not stale)."""
    from bench.site import load_manifest

    urls = load_manifest(site)["urls"]
    n = 0
    for path in changed:
        md = output_path(out, base + path, ".md")
        day = urls[path]["lastmod"][:10]
        if md.exists() and f"Last updated {day}" in md.read_text():
            n += 1
    return n


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("_scrapy-child", "_usp-child"):
        cfg = json.loads(argv[1])
        (_scrapy_child if argv[0] == "_scrapy-child" else _usp_child)(cfg)
        return 0
    ap = argparse.ArgumentParser(prog="python -m bench.scrapy_baseline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("crawl", help="one Scrapy run against a served bench site")
    c.add_argument("--base", required=True)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--no-markdown", action="store_true", help="write raw HTML instead")
    c.add_argument("--httpcache", type=Path, help="HttpCacheMiddleware + RFC2616Policy dir")
    c.add_argument("--concurrency", type=int, default=32)
    c.add_argument("--follow-links", action="store_true",
                   help="CrawlSpider from BASE/ following same-host links (no sitemap)")
    u = sub.add_parser("usp", help="ultimate-sitemap-parser over BASE/robots.txt's sitemaps")
    u.add_argument("--base", required=True)
    u.add_argument("--workdir", type=Path, default=Path("/tmp/sitemap-crawler-bench"))
    a = sub.add_parser("all", help="build, serve with nginx and run every comparison")
    a.add_argument("--workdir", type=Path, default=Path("/tmp/sitemap-crawler-bench"))
    a.add_argument("--pages", type=int, default=5_000)
    a.add_argument("--big-files", type=int, default=20)
    a.add_argument("--per-file", type=int, default=50_000)
    a.add_argument("--only", default="md,raw,incr,usp",
                   help="comma list of md,raw,incr,usp")
    args = ap.parse_args(argv)
    if args.cmd == "crawl":
        ensure_installed(("scrapy",))
        print(json.dumps(crawl(args.base, args.out, markdown=not args.no_markdown,
                               httpcache=args.httpcache, concurrency=args.concurrency,
                               follow_links=args.follow_links)))
    elif args.cmd == "usp":
        ensure_installed(("usp",))
        print(json.dumps(run_usp(args.base, args.workdir)))
    else:
        with contextlib.suppress(KeyboardInterrupt):
            run_all(args.workdir, args.pages, args.big_files, args.per_file,
                    set(args.only.split(",")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
