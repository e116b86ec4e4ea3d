"""config.yaml validation through the real loader and the real CLI (exit codes, one-line errors)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sitemap_crawler.config import load_config
from sitemap_crawler.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_full_config_with_overrides_and_env(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCS_OUT", str(tmp_path / "out"))
    p = write(tmp_path, """
        settings:
          base_output_dir: ${DOCS_OUT}
          request_delay: 0.5
          max_file_size: 2MB
          recrawl_interval: 7d
          crawl_state: {ticket_size: 50, heartbeat_timeout: 30}
        sites:
          - name: docs
            source: https://docs.example.org/sitemap.xml
            filters: {include: ["*/en/*"], exclude: ["*/en/legacy/*"]}
            base_dir: "{domain}"
            request_delay: 2
            crawl_state: {ticket_size: 500}
          - name: mcp
            source: ${MISSING_VAR:-https://mcp.example.org/llms.txt}
    """)
    cfg = load_config(p)
    docs, mcp = cfg.sites
    assert docs.settings.request_delay == 2 and cfg.settings.request_delay == 0.5
    assert docs.settings.crawl_state.ticket_size == 500
    assert docs.settings.crawl_state.heartbeat_timeout == 30  # inherited, not reset
    assert mcp.settings.crawl_state.ticket_size == 50
    assert docs.settings.max_file_size == 2 * 1024 * 1024
    assert docs.settings.recrawl_interval == 7 * 86400
    assert docs.base_dir == (tmp_path / "out" / "docs.example.org").resolve()
    assert docs.state_dir == (tmp_path / "out" / ".crawl-state" / "docs").resolve()
    assert mcp.source == "https://mcp.example.org/llms.txt"
    assert docs.filters.exclude == ("*/en/legacy/*",)


@pytest.mark.parametrize("body,needle", [
    ("settings: {request_delay: fast}\nsites: []", "settings.request_delay: expected a duration"),
    ("settings: {colour: red}\nsites: []", "settings.colour: unknown key"),
    ("settings: {crawl_state: {ticket_size: 0}}\nsites: []",
     "settings.crawl_state.ticket_size: must be greater than 0"),
    ("sites:\n  - name: a\n    source: ftp://x/y", "sites[a].source: expected an http(s) URL"),
    ("sites:\n  - name: a\n    source: file:///srv/sitemap.xml",
     "sites[a].source: expected an http(s) URL, got 'file:///srv/sitemap.xml'"),
    ("sites:\n  - name: a\n    sources: [https://x/, 'file:/srv/llms.txt']",
     "sites[a].source: expected an http(s) URL, got 'file:/srv/llms.txt'"),
    ("settings: {crawl_state: {enabled: false}}\nsites: []",
     "settings.crawl_state.enabled: unknown key"),
    ("sites:\n  - name: a\n    source: https://x/\n    filters: {only: [x]}",
     "sites[a].filters.only: unknown key"),
    ("sites:\n  - name: a\n    source: https://x/\n  - name: a\n    source: https://y/",
     "sites[a]: duplicate site name"),
    ("sites:\n  - name: 'bad name!'\n    source: https://x/", "sites[0].name"),
    ("sites:\n  - name: a\n    source: https://x/\n    output: '{nope}.md'", "bad template"),
    ("settings: {respect_robots_txt: maybe}", "expected true or false"),
    ("settings: {on_removed: shred}", "expected one of delete, move, keep"),
    ("sites: [a, b", "invalid YAML"),
    ("sites:\n  - name: a\n    source: ${NOPE_NOT_SET}", "${NOPE_NOT_SET} is not set"),
])
def test_bad_config_is_one_line_naming_key_and_file(tmp_path, body, needle):
    p = write(tmp_path, body)
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    msg = str(ei.value)
    assert needle in msg and str(p.name) in msg and "\n" not in msg


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sitemap_crawler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_cli_config_errors_exit_2_without_traceback(tmp_path):
    write(tmp_path, "settings: {timeout: -3}\nsites: []\n")
    r = run_cli("list", cwd=tmp_path)
    assert r.returncode == 2
    assert "settings.timeout" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

    r = run_cli("--config", str(tmp_path / "missing.yaml"), "list", cwd=tmp_path)
    assert r.returncode == 2 and "config file not found" in r.stderr

    write(tmp_path, "sites:\n  - name: a\n    source: https://x.invalid/\n")
    r = run_cli("prepare", "nosuchsite", cwd=tmp_path)
    assert r.returncode == 2 and "no site named 'nosuchsite'" in r.stderr
    r = run_cli("work", "--workers", "0", cwd=tmp_path)
    assert r.returncode == 2
    r = run_cli("status", cwd=tmp_path)  # missing argument: a usage error
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_cli_help_everywhere(tmp_path):
    for cmd in ([], ["list"], ["prepare"], ["status"], ["work"], ["crawl"], ["crawl-all"],
                ["resume"], ["demo"]):
        r = run_cli(*cmd, "--help", cwd=tmp_path)
        assert r.returncode == 0, (cmd, r.stderr)
        assert "Usage" in r.stdout
