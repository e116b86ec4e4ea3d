"""The Python API: what the CLI does, callable from a script or a notebook.

Everything here is re-exported by ``sitemap_crawler`` (see its ``__all__``); the CLI calls
these same functions.  A sketch (README "Python API" has a runnable one)::

    import sitemap_crawler as sc
    config = sc.load_config(Path("config.yaml"))      # or sc.config_from_dict({...})
    site = config.site("docs")
    sc.prepare(site)                                  # discover -> tickets
    sc.work(site)                                     # in this process (a notebook)
    sc.work(site, workers=4, config=config)           # or N worker processes
    sc.status(site); sc.export(site, Path("urls.parquet"), "parquet")
    sc.html_to_markdown(html, url).markdown

May import every room; nothing in the package imports it but the CLI and ``__init__``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from sitemap_crawler.commands.export import export as _export
from sitemap_crawler.commands.status import site_status
from sitemap_crawler.commands.work import run_site, work_here
from sitemap_crawler.config import Config, Site, parse_config
from sitemap_crawler.errors import UserError
from sitemap_crawler.protocol.state import StateDir


def config_from_dict(data: dict[str, Any], directory: Path | None = None) -> Config:
    """A config built in code, validated like config.yaml; relative paths in it are taken
    from ``directory`` (default: the current directory)."""
    return parse_config(data, ((directory or Path.cwd()) / "config.yaml").resolve())


def work(site: Site, *, workers: int = 0, config: Config | None = None) -> Counter[str]:
    """Work on ``site``'s tickets until none is left; the totals (urls, new, changed, ...).

    ``workers=0`` runs one worker in this process (a notebook: no processes to manage).
    ``workers=N`` starts N processes, which read their settings from ``config``'s file
    (so workers on other machines can run the same file).  Either way ``max_duration``
    and ``max_total_size`` stop the work as in the CLI: the totals then hold ``stopped``,
    and the next call goes on from there.
    """
    if workers < 0:
        raise UserError("workers: must be 0 (in this process) or more")
    if workers == 0:
        StateDir(site.state_dir).ensure()
        return work_here(site)  # max_duration and max_total_size hold here too
    if config is None or not config.path.is_file():
        raise UserError("work(workers=N) needs the Config loaded from a file (load_config), "
                        "which the worker processes read; use workers=0 for a config built "
                        "in code")
    StateDir(site.state_dir).real_dirs()  # symlinked state folders: quarantined (issue 20)
    return run_site(config.path, site, workers)


def status(site: Site) -> dict[str, Any]:
    """Tickets per state, workers, URLs remaining and failed, speed: ``status --json``."""
    return site_status(site)


def export(site: Site, path: Path, fmt: str = "jsonl") -> int:
    """One row per URL the site knows into ``path`` (jsonl, csv or parquet); rows written."""
    return _export(site, path, fmt)
