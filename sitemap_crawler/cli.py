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
import json
import logging
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from sitemap_crawler import __version__, logs
from sitemap_crawler.config import Config, Site, load_config
from sitemap_crawler.errors import CrawlerError, UserError

# httpx imports its own command line (rich, pygments, click: ~5 MB, a twelfth of prepare's
# 64 MB budget) whenever it can; this process never runs it, so httpx gets its stub instead.
# (Nothing above imports httpx; the commands import it when they run.)
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

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


@app.command()
def prepare(
    site: Annotated[str, typer.Argument(help="Site name from config.yaml.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Discover and count; write "
                                          "nothing.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Queue every URL, even fresh ones.")]
    = False,
) -> None:
    """Discover a site's URLs (sitemaps, robots.txt, llms.txt), filter them, write tickets."""
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


@app.command()
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
        held = f"ticket {w['ticket']}" if w["ticket"] else "idle"
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


def _work(names: list[str], workers: int) -> int:
    """Work on the sites, then write the run's summary line (the last line of --log-file)."""
    done: dict[str, dict[str, object]] = {}
    code = EXIT_FAILED
    try:
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
    """Work on the sites; the exit code says how it ended (see the module docstring)."""
    if workers < 1:
        raise UserError("--workers: must be at least 1")
    cfg = Ctx.config()
    sites = [cfg.site(n) for n in names] if names else list(cfg.sites)
    ran = 0
    failed: list[str] = []
    # A SIGHUP between two sites must not kill the run: the next site takes the new config
    # (run_site handles one during a site's crawl).
    hups: list[int] = []
    old_hup = signal.signal(signal.SIGHUP, lambda signum, _f: hups.append(signum))
    try:
        for site in sites:
            if hups:
                hups.clear()
                site = _reloaded(site)
            code = _work_site(site, bool(names), workers, done, failed)
            if code is not None:
                return code
            ran += site.name in done
    finally:
        signal.signal(signal.SIGHUP, old_hup)
    if not ran and not failed:
        typer.echo("no work left")
    return EXIT_FAILED if failed else EXIT_OK


def _reloaded(site: Site) -> Site:
    """``site`` from config.yaml as it is now, or as it was if the file has an error."""
    try:
        return Ctx.config().site(site.name)
    except CrawlerError as e:
        log.error("SIGHUP: config not reloaded, keeping the old settings: %s", e)
        return site


def _work_site(site: Site, named: bool, workers: int, done: dict[str, dict[str, object]],
               failed: list[str]) -> int | None:
    """One site of :func:`_work_sites`; an exit code when the run must end here."""
    from sitemap_crawler.commands.status import failed_urls
    from sitemap_crawler.commands.work import has_work, run_site, summary, summary_fields
    from sitemap_crawler.fetch.browser import require_browser
    from sitemap_crawler.protocol.state import StateDir, require_writable
    from sitemap_crawler.protocol.tickets import TicketQueue

    state = StateDir(site.state_dir)
    if not state.exists():
        if named:
            raise UserError(f"{site.name}: not prepared (run: sitemap-crawler prepare "
                            f"{site.name})")
        return None
    state.real_dirs()  # a symlinked state folder goes to quarantine/, never written through
    require_writable([*state.writable_dirs(), site.base_dir])
    queue = TicketQueue(state, "cli")
    if has_work(site):
        require_browser(site.settings)  # render: browser | auto: a one-line error if none
        totals = run_site(Ctx.config_path, site, workers)
        typer.echo(summary(site.name, totals))
        done[site.name] = {**summary_fields(totals),
                           "stopped": totals.get("stopped") or
                           ("interrupted" if totals.get("interrupted") else "")}
        if totals.get("interrupted"):
            return EXIT_INTERRUPTED
        if totals.get("workers_died") and queue.has_work():
            # the others could not finish what the dead ones held: not done
            failed.append(site.name)
            log.error("%s: %d worker process(es) ended abnormally (see above) and work is "
                      "left; it goes back to pending: run `sitemap-crawler work %s` again",
                      site.name, totals["workers_died"], site.name)
    else:
        log.info("%s: no work left", site.name)
    n_failed = queue.counts()["failed"]
    if n_failed:
        if site.name not in failed:
            failed.append(site.name)
        log.error("%s: %d ticket(s) failed (%d URL(s) used up their retries); after fixing "
                  "the cause run: sitemap-crawler resume %s --workers %d", site.name,
                  n_failed, failed_urls(queue), site.name, workers)
    return None


@app.command()
def work(
    sites: Annotated[list[str] | None, typer.Argument(help="Sites (default: every site with "
                                                      "work left).")] = None,
    workers: Annotated[int, typer.Option("--workers", "-w", help="Worker processes.")] = 1,
) -> None:
    """Work on prepared tickets until none is left (run it on as many machines as you like)."""
    raise typer.Exit(_work(sites or [], workers))


@app.command()
def crawl(
    site: Annotated[str, typer.Argument(help="Site name from config.yaml.")],
    workers: Annotated[int, typer.Option("--workers", "-w", help="Worker processes.")] = 4,
    full: Annotated[bool, typer.Option("--full", help="Re-fetch every URL.")] = False,
) -> None:
    """prepare + work for one site."""
    prepare(site, dry_run=False, full=full)
    raise typer.Exit(_work([site], workers))


@app.command("crawl-all")
def crawl_all(
    workers: Annotated[int, typer.Option("--workers", "-w", help="Worker processes.")] = 4,
    full: Annotated[bool, typer.Option("--full", help="Re-fetch every URL.")] = False,
) -> None:
    """prepare + work for every configured site."""
    for s in Ctx.config().sites:
        prepare(s.name, dry_run=False, full=full)
    raise typer.Exit(_work([s.name for s in Ctx.config().sites], workers))


@app.command()
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


@app.command()
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


@app.command()
def demo(
    workers: Annotated[int, typer.Option("--workers", "-w", help="Worker processes.")] = 4,
    output: Annotated[Path, typer.Option(help="Where the demo's markdown and state go.")]
    = Path("demo-output"),
    pages: Annotated[int, typer.Option(help="Pages on the demo site.")] = 300,
    serve_only: Annotated[bool, typer.Option("--serve-only", help="Only serve the demo site "
                                             "until Ctrl+C.")] = False,
) -> None:
    """Serve a built-in documentation site on 127.0.0.1 and crawl it end to end.

    Run it twice: the second run sees a new generation of the site (some pages changed,
    removed, added) and shows an incremental crawl.
    """
    from sitemap_crawler.demo.run import run_demo

    raise typer.Exit(run_demo(output, workers=workers, pages=pages, serve_only=serve_only))


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
        exc_mod = _cli_exceptions()
        if isinstance(e, typer.Exit):
            sys.exit(e.exit_code)
        if isinstance(e, exc_mod.ClickException):
            e.show()
            sys.exit(2 if isinstance(e, exc_mod.UsageError) else 1)
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
    sys.exit(rv if isinstance(rv, int) else 0)




def _cli_exceptions():  # type: ignore[no-untyped-def]
    """typer >= 0.2x vendors click as typer._click; older typers use click itself."""
    try:
        from typer._click import exceptions
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import exceptions
    return exceptions
