"""config.yaml: load, expand ``${VAR}``, validate, and merge per-site overrides.

Every wrong key, type or value raises :class:`ConfigError` with one line that names the key
and the file, so the CLI can exit 2 without a traceback.  Settings are plain frozen
dataclasses: the rest of the code never looks at raw YAML.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import typing
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from sitemap_crawler import __version__
from sitemap_crawler.errors import ConfigError

DEFAULT_USER_AGENT = f"sitemap-crawler/{__version__} (+https://github.com/sitemap-crawler)"
SITE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?i?b?)\s*$", re.I)
# A config is small and flat.  YAML aliases let a 1 KB file stand for a tree of billions of
# nodes (expanded by ${VAR} and validation), or for a tree that contains itself: both are
# refused before anything walks the tree.
MAX_CONFIG_BYTES = 1 << 20
MAX_CONFIG_NODES = 100_000  # values in the tree with every alias expanded
MAX_CONFIG_DEPTH = 32


class Duration(float):
    """Seconds; config accepts a number or a string such as ``90s``, ``30m``, ``7d``."""


class Size(int):
    """Bytes; config accepts a number or a string such as ``10MB``, ``512KiB``."""


@dataclass(frozen=True)
class CrawlState:
    ticket_size: int = 100
    heartbeat_interval: Duration = Duration(5)
    heartbeat_timeout: Duration = Duration(60)
    incremental: bool = True
    keep_completed: Duration = Duration(7 * 86400)  # completed tickets older: deleted (0: kept)


@dataclass(frozen=True)
class Filters:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Viewport:
    width: int = 1280
    height: int = 800


@dataclass(frozen=True)
class BrowserSettings:
    """``browser:`` settings for ``render: browser | auto`` (fetch/browser.py)."""

    headless: bool = True
    viewport: Viewport = field(default_factory=Viewport)
    user_agent: str = ""  # empty: the crawler's user_agent
    wait: str = "load"  # load | domcontentloaded | networkidle | a CSS selector
    timeout: Duration = Duration(30)  # per page: navigation and wait together
    block: tuple[str, ...] = ("image", "font", "media")  # resource types never loaded
    executable_path: str = ""  # empty: chromium, chromium-browser or google-chrome on PATH
    restart_every: int = 200  # pages per browser before a fresh one (0: never)


@dataclass(frozen=True)
class Settings:
    base_output_dir: str = "./output"
    user_agent: str = DEFAULT_USER_AGENT
    # politeness
    request_delay: Duration = Duration(1.0)
    min_delay: Duration = Duration(0.0)
    max_delay: Duration = Duration(60.0)
    max_parallel_per_host: int = 8
    # requests (with their conversion) one worker process keeps going at once, over all
    # hosts; lowered so that max_in_flight x max_file_size stays within max_worker_buffer
    max_in_flight: int = 32
    max_worker_buffer: Size = Size(512 * 1024 * 1024)
    respect_robots_txt: bool = True
    robots_cache: Duration = Duration(1800)
    # HTTP
    timeout: Duration = Duration(30)
    connect_timeout: Duration = Duration(10)
    # one request from its first byte sent to its body's last byte (fetch/netguard.py): the
    # read timeout bounds only the gap between bytes, and a drip never trips it
    request_deadline: Duration = Duration(120)
    # networks the address policy lets a site reach besides the public internet and its own
    # source's addresses (fetch/netguard.py), e.g. ["10.0.0.0/8"]
    allow_networks: tuple[str, ...] = ()
    max_retries: int = 3
    max_backoff: Duration = Duration(600)
    patience: int = 5
    max_redirects: int = 10
    # limits
    max_urls_per_site: int = 50000
    max_file_size: Size = Size(10 * 1024 * 1024)
    max_sitemap_size: Size = Size(64 * 1024 * 1024)
    max_urls_per_sitemap: int = 50000
    max_sitemap_depth: int = 5
    max_sitemaps: int = 5000
    cache_sitemaps: bool | Duration = True  # or how long a kept copy is used without asking
    # discovery
    allow_other_hosts: bool = False  # keep page links to other hosts (llms.txt, feeds)
    skip_optional: bool = False  # leave out the links of llms.txt's "## Optional" section
    markdown_twins: bool = False  # ask for a page's .md twin first (the llms.txt proposal)
    min_content_chars: int = 100
    # a stop for long runs (seed 003): per crawl of a site; 0 = no limit.  Reaching one stops
    # the workers as Ctrl+C does (tickets handed back) but is not a failure (exit 0).
    max_duration: Duration = Duration(0)
    max_total_size: Size = Size(0)  # markdown bytes written by one crawl of the site
    # output
    output: str = "{domain}/{path}.md"
    front_matter: bool = True
    on_removed: str = "delete"
    # incremental planning
    crawl_mode: str = "incremental"
    trust_sitemap_dates: bool = True
    recrawl_interval: Duration = Duration(0)
    smart_sample: int = 20
    smart_threshold: float = 0.3
    # link following (seed 004): off unless follow_links; see discover/links.py
    follow_links: bool = False
    max_depth: int = 3
    scope: str = "host"  # host | subdomains | a URL prefix
    do_not_crawl: tuple[str, ...] = ()
    strip_params: tuple[str, ...] = ()
    crawl_state: CrawlState = field(default_factory=CrawlState)
    # the server's Date is the crawl time when it is within this of our clock (seed 000 §10)
    max_clock_skew: Duration = Duration(900)
    # --log-file rotation (global only: one file per machine)
    log_max_size: Size = Size(10 * 1024 * 1024)
    log_backups: int = 5
    # pages that need JavaScript (fetch/browser.py): http | browser | auto
    render: str = "http"
    browser: BrowserSettings = field(default_factory=BrowserSettings)

    def in_flight(self) -> int:
        """``max_in_flight``, bounded so the bodies a worker may hold at once (each up to
        ``max_file_size``) stay within ``max_worker_buffer``; at least 1."""
        return max(1, min(self.max_in_flight, self.max_worker_buffer // self.max_file_size))

    def delay_for(self, robots_delay: float | None) -> float:
        """robots.txt Crawl-delay if given, else request_delay, clamped (seed 000 §4.4)."""
        delay = self.request_delay if robots_delay is None else robots_delay
        return max(self.min_delay, min(self.max_delay, delay))


_CHOICES = {
    "on_removed": ("delete", "move", "keep"),
    "crawl_mode": ("full", "incremental", "smart"),
    "render": ("http", "browser", "auto"),
}
_POSITIVE = {"ticket_size", "heartbeat_interval", "heartbeat_timeout", "timeout",
             "connect_timeout", "request_deadline", "max_parallel_per_host", "max_in_flight",
             "max_worker_buffer", "max_file_size", "max_sitemap_size",
             "max_urls_per_sitemap", "max_sitemaps"}
_POSITIVE |= {"width", "height"}  # browser.viewport
_BLOCKABLE = ("image", "font", "media", "stylesheet")  # browser.block


@dataclass(frozen=True)
class Site:
    name: str
    sources: tuple[str, ...]
    filters: Filters
    base_dir: Path
    settings: Settings
    state_dir: Path

    @property
    def source(self) -> str:
        return self.sources[0]


@dataclass(frozen=True)
class Config:
    path: Path
    settings: Settings
    sites: tuple[Site, ...]

    def site(self, name: str) -> Site:
        for s in self.sites:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.sites) or "none"
        raise ConfigError(f"no site named {name!r} in {self.path} (sites: {known})")


# ---------------------------------------------------------------------------------------------


def check_bounded(data: Any, path: Path) -> None:
    """Refuse a YAML tree that contains itself (a recursive alias), nests deeper than
    :data:`MAX_CONFIG_DEPTH` or stands for more than :data:`MAX_CONFIG_NODES` values once
    its aliases are expanded (an alias bomb).  Shared subtrees are counted once per use but
    walked once, so this costs the size of the file, not of the expansion."""
    sizes: dict[int, int] = {}  # id -> expanded size of a subtree already walked
    open_: set[int] = set()  # ids on the current path: meeting one again is a cycle

    def size(value: Any, depth: int) -> int:
        if not isinstance(value, dict | list):
            return 1
        key = id(value)
        if key in open_:
            raise ConfigError(f"{path}: a recursive YAML alias (a value that contains itself)")
        if key in sizes:
            return sizes[key]
        if depth > MAX_CONFIG_DEPTH:
            raise ConfigError(f"{path}: nested more than {MAX_CONFIG_DEPTH} levels deep")
        open_.add(key)
        n = 1
        for child in (value.values() if isinstance(value, dict) else value):
            n += size(child, depth + 1)
            if n > MAX_CONFIG_NODES:
                raise ConfigError(f"{path}: more than {MAX_CONFIG_NODES} values once YAML "
                                  "aliases are expanded (an alias bomb?)")
        open_.discard(key)
        sizes[key] = n
        return n

    size(data, 0)


def expand_env(value: Any, where: str, path: Path) -> Any:
    """Expand ``${VAR}`` and ``${VAR:-default}`` in every string of the YAML tree."""
    if isinstance(value, str):
        def repl(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{path}: {where}: environment variable ${{{name}}} is not set")
        return _ENV_RE.sub(repl, value)
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}" if where else str(k), path)
                for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{where}[{i}]", path) for i, v in enumerate(value)]
    return value


def _coerce(value: Any, typ: Any, key: str, path: Path) -> Any:
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{path}: {key}: expected {expected}, got {value!r}")

    if typ is bool:
        if isinstance(value, bool):
            return value
        raise bad("true or false")
    if typ == bool | Duration:  # cache_sitemaps: true, false, or a max age (hours if a number)
        if isinstance(value, bool):
            return value
        m = _DURATION_RE.match(str(value).lower()) if isinstance(value, int | float | str) else None
        if m is None:
            raise bad("true, false, or a max age (hours, or e.g. '30m', '2d')")
        age = float(m.group(1)) * _UNITS[m.group(2) or "h"]
        return Duration(age) if age > 0 else True
    if typ is Duration:
        if isinstance(value, bool):
            raise bad("a duration (seconds, or e.g. '30m', '7d')")
        if isinstance(value, int | float):
            out = float(value)
        elif isinstance(value, str) and (m := _DURATION_RE.match(value.lower())):
            out = float(m.group(1)) * _UNITS[m.group(2)]
        else:
            raise bad("a duration (seconds, or e.g. '30m', '7d')")
        if out < 0:
            raise bad("a duration >= 0")
        return Duration(out)
    if typ is Size:
        if isinstance(value, int) and not isinstance(value, bool):
            out_i = value
        elif isinstance(value, str) and (m := _SIZE_RE.match(value)):
            unit = m.group(2).lower().rstrip("b").rstrip("i")
            mult = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]
            out_i = int(float(m.group(1)) * mult)
        else:
            raise bad("a size in bytes (or e.g. '10MB')")
        if out_i < 0:
            raise bad("a size >= 0")
        return Size(out_i)
    if typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise bad("a whole number >= 0")
            return value
        raise bad("a whole number")
    if typ is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise bad("a number")
    if typ is str:
        if isinstance(value, str):
            return value
        raise bad("a string")
    if typ == tuple[str, ...]:
        return _str_list(value, key, path)
    raise AssertionError(f"unhandled config type {typ}")


def _build(cls: type, raw: Any, key: str, path: Path, base: Any = None) -> Any:
    """Build dataclass ``cls`` from mapping ``raw``, starting from ``base`` (for overrides)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {key}: expected a mapping, got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    for k, v in raw.items():
        sub = f"{key}.{k}" if key else str(k)
        if k not in names:
            raise ConfigError(f"{path}: {sub}: unknown key (known: {', '.join(sorted(names))})")
        typ = hints[k]
        if dataclasses.is_dataclass(typ):
            values[k] = _build(typ, v, sub, path, getattr(base, k) if base else None)
            continue
        values[k] = _coerce(v, typ, sub, path)
        if k in _CHOICES and values[k] not in _CHOICES[k]:
            raise ConfigError(f"{path}: {sub}: expected one of {', '.join(_CHOICES[k])}, got {v!r}")
        if k in _POSITIVE and values[k] <= 0:
            raise ConfigError(f"{path}: {sub}: must be greater than 0, got {v!r}")
        if k == "wait" and not values[k].strip():
            raise ConfigError(f"{path}: {sub}: expected load, domcontentloaded, networkidle "
                              "or a CSS selector")
        if k == "block" and (bad := [b for b in values[k] if b not in _BLOCKABLE]):
            raise ConfigError(f"{path}: {sub}: unknown resource type {bad[0]!r} (known: "
                              f"{', '.join(_BLOCKABLE)})")
        if k == "scope" and values[k] not in ("host", "subdomains") \
                and not re.match(r"^https?://[^/\s]+", values[k]):
            raise ConfigError(f"{path}: {sub}: expected host, subdomains or a URL prefix "
                              f"(https://...), got {v!r}")
        if k == "allow_networks":
            _check_networks(values[k], sub, path)
    obj = dataclasses.replace(base, **values) if base is not None else cls(**values)
    return obj


def _str_list(raw: Any, key: str, path: Path) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise ConfigError(f"{path}: {key}: expected a list of non-empty strings, got {raw!r}")
    return tuple(raw)


def _check_networks(nets: tuple[str, ...], key: str, path: Path) -> None:
    """Each entry an IP network (``10.0.0.0/8``, ``fd00::/8``) or one address."""
    import ipaddress

    for n in nets:
        try:
            ipaddress.ip_network(n.strip(), strict=False)
        except ValueError:
            raise ConfigError(f"{path}: {key}: expected IP networks such as 10.0.0.0/8, "
                              f"got {n!r}") from None


def _check_template(tpl: str, key: str, path: Path) -> None:
    try:
        tpl.format(domain="d", date="2000-01-01", site="s", path="p")
    except (KeyError, IndexError, ValueError) as e:
        raise ConfigError(
            f"{path}: {key}: bad template {tpl!r} (fields: {{domain}}, {{date}}, {{site}}, "
            f"{{path}}): {e}"
        ) from None


def render_template(tpl: str, *, domain: str, site: str, path: str = "") -> str:
    return tpl.format(domain=domain, date=date.today().isoformat(), site=site, path=path)


SITE_KEYS = {"name", "source", "sources", "filters", "base_dir", "output"}
GLOBAL_ONLY = {"log_max_size", "log_backups"}  # about the process, not about a site
_SETTING_NAMES = {f.name for f in dataclasses.fields(Settings)}


def _unknown(raw: Any, known: typing.Collection[str], key: str) -> list[str]:
    """``key.k: unknown key`` for each key of mapping ``raw`` not in ``known``, with a
    "did you mean" when one is close."""
    if not isinstance(raw, dict):
        return []  # a wrong type is reported where the value is read
    out = []
    for k in raw:
        if k not in known:
            close = difflib.get_close_matches(str(k), sorted(known), n=1, cutoff=0.6)
            out.append(f"{key}{k}: unknown key" + (f" (did you mean {close[0]}?)" if close
                                                  else ""))
    return out


def _unknown_settings(raw: Any, cls: type, key: str, extra: typing.Collection[str] = ()
                      ) -> list[str]:
    """Unknown keys of a settings mapping and of its nested sections (crawl_state, ...)."""
    if not isinstance(raw, dict):
        return []
    hints = typing.get_type_hints(cls)
    out = _unknown(raw, {*hints, *extra}, key)
    for k, v in raw.items():
        if k in hints and dataclasses.is_dataclass(hints[k]):
            out += _unknown_settings(v, hints[k], f"{key}{k}.")
    return out


def _check_keys(data: dict[str, Any], path: Path) -> None:
    """Every unknown key of the file in one line, so that one run finds them all."""
    bad = _unknown(data, ("settings", "sites"), "")
    bad += _unknown_settings(data.get("settings"), Settings, "settings.")
    sites = data.get("sites") if isinstance(data.get("sites"), list) else []
    for i, raw in enumerate(sites):
        if not isinstance(raw, dict):
            continue
        name = raw.get("name")
        key = f"sites[{name if isinstance(name, str) else i}]."
        bad += _unknown_settings(raw, Settings, key, SITE_KEYS)
        bad += _unknown(raw.get("filters"), ("include", "exclude"), f"{key}filters.")
    if bad:
        raise ConfigError(f"{path}: {'; '.join(bad)}")


def parse_config(data: Any, path: Path) -> Config:
    """Validate the YAML tree ``data`` read from ``path``."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level: expected a mapping with 'settings' and 'sites'")
    check_bounded(data, path)
    data = expand_env(data, "", path)
    _check_keys(data, path)
    for k in data:
        if k not in ("settings", "sites"):
            raise ConfigError(f"{path}: {k}: unknown key (known: settings, sites)")
    settings = _build(Settings, data.get("settings"), "settings", path)
    _check_template(settings.output, "settings.output", path)
    raw_sites = data.get("sites") or []
    if not isinstance(raw_sites, list):
        raise ConfigError(f"{path}: sites: expected a list of sites")
    root = path.parent
    sites: list[Site] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_sites):
        key = f"sites[{i}]"
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: {key}: expected a mapping with name and source")
        name = raw.get("name")
        if not isinstance(name, str) or not SITE_NAME_RE.match(name):
            raise ConfigError(
                f"{path}: {key}.name: expected a name of letters, digits, '.', '_' or '-', "
                f"got {name!r}"
            )
        key = f"sites[{name}]"
        if name in seen:
            raise ConfigError(f"{path}: {key}: duplicate site name")
        seen.add(name)
        overrides = {k: v for k, v in raw.items() if k not in SITE_KEYS}
        for k in overrides:
            if k in GLOBAL_ONLY:
                raise ConfigError(f"{path}: {key}.{k}: a global setting (put it under "
                                  "settings:)")
            if k not in _SETTING_NAMES:
                raise ConfigError(f"{path}: {key}.{k}: unknown key (site keys: "
                                  f"{', '.join(sorted(SITE_KEYS))}, or any setting)")
        site_settings = _build(Settings, overrides, key, path, base=settings)
        if "output" in raw:
            site_settings = dataclasses.replace(
                site_settings, output=_coerce(raw["output"], str, f"{key}.output", path))
        _check_template(site_settings.output, f"{key}.output", path)
        sources = _str_list(raw.get("sources", raw.get("source")), f"{key}.source", path)
        if not sources:
            raise ConfigError(f"{path}: {key}.source: missing (a sitemap, llms.txt or site URL)")
        for s in sources:
            if not re.match(r"^https?://[^/\s]+", s):  # discovery reads http(s) only
                raise ConfigError(f"{path}: {key}.source: expected an http(s) URL, got {s!r}")
        filters_raw = raw.get("filters") or {}
        if not isinstance(filters_raw, dict):
            raise ConfigError(f"{path}: {key}.filters: expected a mapping with include/exclude")
        for k in filters_raw:
            if k not in ("include", "exclude"):
                raise ConfigError(f"{path}: {key}.filters.{k}: unknown key (include, exclude)")
        filters = Filters(
            include=_str_list(filters_raw.get("include"), f"{key}.filters.include", path),
            exclude=_str_list(filters_raw.get("exclude"), f"{key}.filters.exclude", path),
        )
        base_output = (root / site_settings.base_output_dir).resolve()
        base_dir_raw = raw.get("base_dir", "{site}")
        if not isinstance(base_dir_raw, str) or not base_dir_raw:
            raise ConfigError(f"{path}: {key}.base_dir: expected a path, got {base_dir_raw!r}")
        _check_template(base_dir_raw, f"{key}.base_dir", path)
        from urllib.parse import urlsplit

        domain = urlsplit(sources[0]).hostname or "local"
        base_dir = Path(render_template(base_dir_raw, domain=domain, site=name))
        if not base_dir.is_absolute():
            base_dir = base_output / base_dir
        sites.append(Site(
            name=name, sources=sources, filters=filters, base_dir=base_dir,
            settings=site_settings, state_dir=base_output / ".crawl-state" / name,
        ))
    return Config(path=path, settings=settings, sites=tuple(sites))


def load_config(path: Path) -> Config:
    """Read and validate ``path``; every problem is a one-line :class:`ConfigError`."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not a config file?")
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found (use --config PATH or "
                          "SITEMAP_CRAWLER_CONFIG)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{path}: {where}invalid YAML: {problem}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise ConfigError(f"{path}: nested more than {MAX_CONFIG_DEPTH} levels deep") from None
    return parse_config(data, path.resolve())


