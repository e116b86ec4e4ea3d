"""The command line: a thin layer over prepare, runner, status and the demo.

Exit codes, for scripts and cron: 0 everything done; 1 a runtime failure, or some tickets
ended in failed/ (the message names how many and the ``resume`` command); 2 a usage or
configuration error; 130 interrupted (Ctrl+C or SIGTERM).  A crawl stopped by max_duration or
max_total_size exits 0: its summary (and the run_summary log line) says ``stopped``.
Every error the user can meet is one line on stderr, never a traceback (``--verbose`` adds
the traceback for bug reports).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import signal
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated

import typer

from sitemap_crawler import __version__, logs
from sitemap_crawler.config import Config, Site, load_config
from sitemap_crawler.errors import CrawlerError, UserError

log = logging.getLogger("sitemap_crawler")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_CODES_HELP = ("Exit codes: 0 everything done (or stopped by max_duration/max_total_size: "
                   "the summary says so); 1 a failure, or tickets left in failed/ (see "
                   "`resume`); 2 usage or configuration error; 130 interrupted.")

app = typer.Typer(
    name="sitemap-crawler", no_args_is_help=True, add_completion=False,
    help="Turn whole websites into clean markdown, fast and politely, and keep them fresh.\n\n"
    + EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    # plain help: the rich layout of typer 0.2x shows "<bool>" after every flag
    rich_markup_mode=None,
)


class Ctx:
    config_path: Path = Path("config.yaml")
    verbose: bool = False

    @classmethod
    def config(cls) -> Config:
        cfg = load_config(cls.config_path)
        logs.set_rotation(cfg.settings.log_max_size, cfg.settings.log_backups)
        return cfg


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sitemap-crawler {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    config: Annotated[Path, typer.Option("--config", "-c", envvar="SITEMAP_CRAWLER_CONFIG",
                                         help="Path to config.yaml.")] = Path("config.yaml"),
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
    log_file: Annotated[str | None, typer.Option(help="Also write JSON-lines logs here (a "
                                                 "local disk; rotated by log_max_size and "
                                                 "log_backups).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug output.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise UserError(f"--log-level: expected DEBUG, INFO, WARNING or ERROR, got {log_level!r}")
    Ctx.config_path, Ctx.verbose = config, verbose
    logs.setup(log_level, log_file, verbose)


@app.command("list")
def list_sites() -> None:
    """List the configured sites and the state of each."""
    from sitemap_crawler.protocol.state import StateDir
    from sitemap_crawler.protocol.tickets import TicketQueue

    cfg = Ctx.config()
    if not cfg.sites:
        typer.echo(f"no sites in {cfg.path}")
    for site in cfg.sites:
        state = StateDir(site.state_dir)
        if state.exists():
            c = TicketQueue(state, "list").counts()
            st = (f"pending {c['pending']}, claimed {c['claimed']}, completed {c['completed']}, "
                  f"failed {c['failed']}")
        else:
            st = "not prepared"
        typer.echo(f"{site.name:24} {', '.join(site.sources)}\n{'':24} -> {site.base_dir} ({st})")


@app.command(short_help="Discover a site's URLs and write tickets.")
def prepare(
    site: Annotated[str, typer.Argument(help="Site name from config.yaml.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Discover and count; write "
                                          "nothing.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Queue every URL, even fresh ones, and "
                                       "fetch each without validators (no 304).")] = False,
) -> None:
    """Discover a site's URLs (sitemaps, robots.txt, llms.txt), filter them, write tickets."""
    from sitemap_crawler.fetch.lean import import_http

    import_http()  # without httpx's own command line: 8 MiB of prepare's budget (lean.py)
    from sitemap_crawler.commands.prepare import prepare as do_prepare

    s = Ctx.config().site(site)
    with _discovery_progress(site) as progress:
        res = do_prepare(s, dry_run=dry_run, full=full, progress=progress)
    for w in res.warnings:
        log.warning(w)
    for reason, n in sorted(res.filtered.items()):
        log.info("filtered out by %s: %d", reason, n)
    typer.echo(res.summary())


@contextlib.contextmanager
def _discovery_progress(site: str) -> Iterator[Callable[[str], None]]:
    """A live status line on a terminal (files read, URLs so far); log lines otherwise."""
    if not sys.stderr.isatty():
        yield lambda msg: log.info(msg)
        return
    from rich.console import Console

    files = [0]
    with Console(stderr=True).status(f"{site}: discovering URLs ...") as st:
        def show(msg: str) -> None:
            files[0] += 1
            log.debug(msg)
            st.update(f"{site}: {files[0]} file(s) read; last: {msg}")
        yield show


@app.command(short_help="Tickets, workers, speed and ETA of a site.")
def status(
    site: Annotated[str, typer.Argument(help="Site name from config.yaml.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    watch: Annotated[float, typer.Option(help="Seconds to watch heartbeats of workers on "
                                         "other machines.")] = 0.0,
    report: Annotated[bool, typer.Option("--report", help="The last crawl's report "
                                         "(markdown; with --json as JSON).")] = False,
) -> None:
    """Tickets per state, live and dead workers, URLs done and failed, speed and ETA."""
    from sitemap_crawler.commands.status import site_status

    if report:
        _show_report(site, as_json)
        return
    st = site_status(Ctx.config().site(site), watch=watch)
    if as_json:
        typer.echo(json.dumps(st, indent=2, sort_keys=True))
        return
    if not st["prepared"]:
        typer.echo(f"{site}: not prepared (run: sitemap-crawler prepare {site})")
        return
    t = st["tickets"]
    typer.echo(f"{site}: tickets pending {t['pending']}, claimed {t['claimed']}, "
               f"completed {t['completed']}, failed {t['failed']}")
    typer.echo(f"  URLs remaining {st['urls_remaining']}, failed {st['urls_failed']}, "
               f"in index {st['index_urls']}")
    for w in st["workers"]:
        alive = {True: "alive", False: "dead", None: "unknown (use --watch)"}[w["alive"]]
        more = int(w.get("tickets") or 0) - 1
        held = (f"ticket {w['ticket']}" + (f" (+{more} more)" if more > 0 else "")
                if w["ticket"] else "idle")
        typer.echo(f"  worker {w['worker_id']}: {alive}, {held}, {w['urls_done']} URLs done")
    if st["dead_workers"]:
        typer.echo(f"  dead workers (tickets taken back): {', '.join(st['dead_workers'])}")
    if st["pages_per_second"]:
        eta = f", ETA {st['eta_seconds']}s" if st["eta_seconds"] is not None else ""
        typer.echo(f"  {st['pages_per_second']} pages/s{eta}")
    if st.get("last_crawl"):
        typer.echo(f"  last crawl: {json.dumps(st['last_crawl'], sort_keys=True)}")


def _show_report(site: str, as_json: bool) -> None:
    from sitemap_crawler.commands import report
    from sitemap_crawler.protocol.state import StateDir

    rep = report.read(StateDir(Ctx.config().site(site).state_dir))
    if rep is None:
        raise UserError(f"{site}: no crawl report yet (one is written at the end of every "
                        f"crawl: sitemap-crawler work {site})")
    typer.echo(json.dumps(rep, indent=2, sort_keys=True) if as_json else report.markdown(rep))


def _work(names: list[str], workers: int, first: Callable[[], object] | None = None) -> int:
    """Work on the sites, then write the run's summary line (the last line of --log-file),
    also when ``first`` (crawl's prepare) fails."""
    from sitemap_crawler.fetch.lean import import_http

    import_http()  # the workers fork from here: each without httpx's command line (lean.py)
    done: dict[str, dict[str, object]] = {}
    code = EXIT_FAILED
    try:
        if first is not None:
            first()
        code = _work_sites(names, workers, done)
        return code
    except CrawlerError as e:
        code = e.exit_code
        raise
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
        raise
    finally:
        _run_summary(done, code)


def _run_summary(done: dict[str, dict[str, object]], code: int) -> None:
    """One JSON line a script can read: totals over the sites, each site, how it ended."""
    totals: dict[str, float] = {}
    for fields in done.values():
        for k, v in fields.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                totals[k] = totals.get(k, 0) + v
    stopped = sorted({str(f["stopped"]) for f in done.values() if f.get("stopped")})
    logs.summary_line({**totals, "sites": done, "exit_code": code,
                       "stopped": ",".join(stopped)})


def _work_sites(names: list[str], workers: int, done: dict[str, dict[str, object]]) -> int:
    """Work on every site with work at once (commands/dispatch.py); the exit code says how it
    ended (see the module docstring)."""
    from sitemap_crawler.commands.work import has_work, run_sites
    from sitemap_crawler.fetch.browser import require_browser
    from sitemap_crawler.protocol.state import StateDir, require_writable

    if workers < 1:
        raise UserError("--workers: must be at least 1")
    cfg = Ctx.config()
    sites = [cfg.site(n) for n in names] if names else list(cfg.sites)
    # A SIGHUP before the workers start must not kill the run: the new config is taken
    # (run_sites handles one during the crawl).
    hups: list[int] = []
    old_hup = signal.signal(signal.SIGHUP, lambda signum, _f: hups.append(signum))

    def check(site: Site) -> bool:
        """True if ``site`` has work; raises if it cannot be worked."""
        state = StateDir(site.state_dir)
        if not state.exists():
            if names:
                raise UserError(f"{site.name}: not prepared (run: sitemap-crawler "
                                f"prepare {site.name})")
            return False
        state.real_dirs()  # a symlinked state folder goes to quarantine/, never followed
        require_writable([*state.writable_dirs(), site.base_dir])
        if has_work(site):
            require_browser(site.settings)  # render: browser | auto: one-line error
            return True
        log.debug("%s: no work left", site.name)  # said once for the run, below
        return False

    try:
        # Side by side: a dozen folder probes per site, one after another, held 200 sites'
        # first requests back by 2 s.  map() raises the first error in config order.
        with ThreadPoolExecutor(min(16, len(sites) or 1)) as pool:
            active = [site for site, ok in zip(sites, pool.map(check, sites), strict=True)
                      if ok]
        if hups:
            active = [_reloaded(site) for site in active]
    finally:
        signal.signal(signal.SIGHUP, old_hup)
    failed: list[str] = []
    totals = run_sites(Ctx.config_path, active, workers) if active else {}
    code = None
    for site in sites:
        if site.name in totals:
            code = _site_done(site, totals[site.name], done, failed) or code
        _check_failed(site, workers, failed)
    if code is not None:
        return code
    if not active and not failed:
        typer.echo("no work left")
    return EXIT_FAILED if failed else EXIT_OK


def _reloaded(site: Site) -> Site:
    """``site`` from config.yaml as it is now, or as it was if the file has an error."""
    try:
        return Ctx.config().site(site.name)
    except CrawlerError as e:
        log.error("SIGHUP: config not reloaded, keeping the old settings: %s", e)
        return site


def _site_done(site: Site, totals: Counter[str], done: dict[str, dict[str, object]],
               failed: list[str]) -> int | None:
    """Say how one site of the run went; an exit code when the run must end with it."""
    from sitemap_crawler.commands.work import summary, summary_fields
    from sitemap_crawler.protocol.state import StateDir
    from sitemap_crawler.protocol.tickets import TicketQueue

    typer.echo(summary(site.name, totals))
    done[site.name] = {**summary_fields(totals),
                       "stopped": totals.get("stopped") or
                       ("interrupted" if totals.get("interrupted") else "")}
    if totals.get("interrupted"):
        return EXIT_INTERRUPTED
    if totals.get("workers_died") and TicketQueue(StateDir(site.state_dir), "cli").has_work():
        # the others could not finish what the dead ones held: not done
        failed.append(site.name)
        log.error("%s: %d worker process(es) ended abnormally (see above) and work is "
                  "left; it goes back to pending: run `sitemap-crawler work %s` again",
                  site.name, totals["workers_died"], site.name)
    return None


def _check_failed(site: Site, workers: int, failed: list[str]) -> None:
    """Tickets in failed/ make the run fail, with the command that retries them."""
    from sitemap_crawler.commands.status import failed_urls
    from sitemap_crawler.protocol.state import StateDir
    from sitemap_crawler.protocol.tickets import TicketQueue

    state = StateDir(site.state_dir)
    if not state.exists():
        return
    queue = TicketQueue(state, "cli")
    n_failed = queue.counts()["failed"]
    if n_failed:
        if site.name not in failed:
            failed.append(site.name)
        log.error("%s: %d ticket(s) failed (%d URL(s) used up their retries); after fixing "
                  "the cause run: sitemap-crawler resume %s --workers %d", site.name,
                  n_failed, failed_urls(queue), site.name, workers)


# One process per core: conversion is CPU work, and each process keeps max_in_flight
# requests going (commands/dispatch.py), so more processes than cores buy nothing.
DEFAULT_WORKERS = max(1, min(os.cpu_count() or 1, 8))
WORKERS_HELP = "Worker processes (default: one per CPU core, at most 8)."


@app.command(short_help="Work on prepared tickets until none is left.")
def work(
    sites: Annotated[list[str] | None, typer.Argument(help="Sites (default: every site with "
                                                      "work left).")] = None,
    workers: Annotated[int, typer.Option("--workers", "-w", help=WORKERS_HELP)] = DEFAULT_WORKERS,
) -> None:
    """Work on prepared tickets until none is left (run it on as many machines as you like)."""
    raise typer.Exit(_work(sites or [], workers))


@app.command()
def crawl(
    site: Annotated[str, typer.Argument(help="Site name from config.yaml.")],
    workers: Annotated[int, typer.Option("--workers", "-w", help=WORKERS_HELP)] = DEFAULT_WORKERS,
    full: Annotated[bool, typer.Option("--full", help="Re-fetch every URL in full "
                                       "(no 304).")] = False,
) -> None:
    """prepare + work for one site."""
    raise typer.Exit(_work([site], workers,
                           first=lambda: prepare(site, dry_run=False, full=full)))


@app.command("crawl-all")
def crawl_all(
    workers: Annotated[int, typer.Option("--workers", "-w", help=WORKERS_HELP)] = DEFAULT_WORKERS,
    full: Annotated[bool, typer.Option("--full", help="Re-fetch every URL in full "
                                       "(no 304).")] = False,
) -> None:
    """prepare + work for every configured site."""
    sites = Ctx.config().sites

    def prepare_all() -> None:
        if len(sites) == 1:
            prepare(sites[0].name, dry_run=False, full=full)
        else:
            _prepare_all(sites, full)
    raise typer.Exit(_work([], workers, first=prepare_all))  # []: every site (all prepared)


PREPARES_AT_ONCE = 48


def _prepare_all(sites: list[Site], full: bool) -> None:
    """Prepare the sites side by side, one process each (at most 48 at once): discovery
    waits on each host's delay (fetch/gated.py), so one after another would cost a delay
    per site.  Summaries in config order; the first error ends the command, as before."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    import sitemap_crawler.commands.prepare  # noqa: F401  (imported once, before the fork)
    from sitemap_crawler.fetch.client import preload

    preload()

    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    # Mostly waiting (each host's delay, before and after its last request): many at once.
    pool = ProcessPoolExecutor(min(PREPARES_AT_ONCE, len(sites)),
                               mp_context=mp.get_context(method))
    try:
        futures = [pool.submit(_prepare_one, site, full) for site in sites]
        for fut in futures:
            warnings, filtered, summary = fut.result()
            for w in warnings:
                log.warning(w)
            for reason, n in sorted(filtered.items()):
                log.info("filtered out by %s: %d", reason, n)
            typer.echo(summary)
    except BaseException:
        pool.shutdown(wait=True)
        raise
    # Every ticket is written: the work starts now.  The pool's processes still give their
    # last tokens back when those delays are over (linger) and exit; the workers wait for
    # those hosts' tokens on the gate, as for any other process's.
    pool.shutdown(wait=False)


def _prepare_one(site: Site, full: bool) -> tuple[list[str], dict[str, int], str]:
    from sitemap_crawler.commands.prepare import prepare as do_prepare

    # linger: a pool process goes on to the next site while this one's delays run out
    res = do_prepare(site, dry_run=False, full=full, linger=True,
                     progress=lambda msg: log.info(msg))
    return list(res.warnings), dict(res.filtered), res.summary()


@app.command(short_help="Failed and dead workers' tickets -> pending.")
def resume(
    site: Annotated[str, typer.Argument(help="Site name from config.yaml.")],
    workers: Annotated[int, typer.Option("--workers", "-w", help="Then work with this many "
                                         "processes (0: only requeue).")] = 0,
) -> None:
    """Put failed tickets and tickets of dead workers back to pending (then optionally work)."""
    from sitemap_crawler.commands.worker import reclaim_dead
    from sitemap_crawler.protocol.heartbeat import Observer
    from sitemap_crawler.protocol.state import StateDir, new_worker_id
    from sitemap_crawler.protocol.tickets import TicketQueue

    s = Ctx.config().site(site)
    state = StateDir(s.state_dir)
    if not state.exists():
        raise UserError(f"{site}: not prepared (run: sitemap-crawler prepare {site})")
    q = TicketQueue(state, new_worker_id())
    n_failed = q.resume_failed()
    obs = Observer(state.workers, s.settings.crawl_state.heartbeat_timeout)
    dead = reclaim_dead(state, q, obs)
    remote = [n.owner for n in q.names("claimed") if n.owner]
    typer.echo(f"{site}: {n_failed} failed ticket(s) and the tickets of {len(dead)} dead "
               f"worker(s) back to pending" + (f"; {len(remote)} ticket(s) held by workers "
                                                "that look alive (on other machines they are "
                                                "judged after heartbeat_timeout)"
                                                if remote else ""))
    if workers:
        raise typer.Exit(_work([site], workers))


@app.command(short_help="One row per URL: outcome, reason, file, validators.")
def export(
    site: Annotated[str, typer.Argument(help="Site name from config.yaml.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl, csv or parquet (needs "
                                     "pyarrow).")] = "jsonl",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write.")]
    = None,
) -> None:
    """One row per URL the site knows: outcome, reason, status, file, validators, ..."""
    from sitemap_crawler import api

    if output is None:
        raise UserError("export: -o PATH is required")
    n = api.export(Ctx.config().site(site), output, fmt)
    typer.echo(f"{site}: {n} URLs -> {output}")


@app.command(short_help="Serve a built-in site on 127.0.0.1; crawl it.")
def demo(
    workers: Annotated[int, typer.Option("--workers", "-w", help=WORKERS_HELP)] = DEFAULT_WORKERS,
    output: Annotated[Path, typer.Option(help="Where the demo's markdown and state go.")]
    = Path("demo-output"),
    pages: Annotated[int, typer.Option(help="Pages on the demo site.")] = 300,
    serve_only: Annotated[bool, typer.Option("--serve-only", help="Only serve the demo site "
                                             "until Ctrl+C (on port 8765 unless --port: "
                                             "config.yaml's local-demo).")] = False,
    port: Annotated[int | None, typer.Option(help="Port on 127.0.0.1 to serve on (default: "
                                             "8765 with --serve-only, else the last run's "
                                             "or a free one).")] = None,
) -> None:
    """Serve a built-in documentation site on 127.0.0.1 and crawl it end to end.

    Run it twice: the second run sees a new generation of the site (some pages changed,
    removed, added) and shows an incremental crawl.
    """
    from sitemap_crawler.demo.run import run_demo

    raise typer.Exit(run_demo(output, workers=workers, pages=pages, serve_only=serve_only,
                              port=port))


def main() -> None:
    """Console entry point: one-line errors, proper exit codes."""
    # SIGTERM is Ctrl+C for every command (exit 130, locks released on the way out);
    # ``work`` installs its own handlers for the time it runs workers.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        rv = app(standalone_mode=False)
    except CrawlerError as e:
        typer.echo(f"error: {e}", err=True)
        if Ctx.verbose:
            traceback.print_exc()
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except OSError as e:
        # A full disk or a vanished share: say which file, keep what was written.
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        typer.echo(f"error: {e.strerror or e}{where}", err=True)
        if Ctx.verbose:
            traceback.print_exc()
        sys.exit(1)
    except Exception as e:  # the CLI library's own usage errors, then real bugs
        if isinstance(e, typer.Exit):
            sys.exit(e.exit_code)
        if _usage_error(e):
            e.show()  # type: ignore[attr-defined]
            sys.exit(e.exit_code)  # type: ignore[attr-defined]
        if isinstance(e, typer.Abort):
            typer.echo("interrupted", err=True)
            sys.exit(130)
        typer.echo(f"error: unexpected {type(e).__name__}: {e} (this is a bug; --verbose shows "
                   "the traceback)", err=True)
        if Ctx.verbose:
            traceback.print_exc()
        sys.exit(1)
    if rv == EXIT_INTERRUPTED:  # the CLI library caught a KeyboardInterrupt itself
        typer.echo("interrupted", err=True)
    # The command is over and its files closed: the interpreter's exit need not walk the
    # heap for cycles (typer, pydantic, httpx, lxml: ~0.1 s of a crawl's wall time, seen
    # after the last page of a 1,000-page crawl).  atexit handlers (log flushing) still run.
    gc.disable()
    gc.freeze()
    sys.exit(rv if isinstance(rv, int) else 0)




def _usage_error(e: Exception) -> bool:
    """The CLI library's own errors (a bad option, a missing argument: exit 2) show
    themselves and carry their exit code; told by that, not by a class of its private
    modules (typer vendors click, older versions use click, which we do not declare)."""
    return callable(getattr(e, "show", None)) and isinstance(getattr(e, "exit_code", None), int)
