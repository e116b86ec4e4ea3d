"""What the CLI prints is true and said once (issue 21, item 18), through real subprocesses."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import yaml
from httpserver import Response
from sites import cli, doc_site, page_html, popen_cli, write_config
from waiting import wait_until


def test_every_unknown_config_key_in_one_run_with_did_you_mean(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({
        "settings": {"request_dealy": 1, "crawl_state": {"ticket_sise": 5}},
        "sites": [{"name": "a", "source": "https://x.invalid/", "max_dept": 3,
                   "colour": "red", "filters": {"exclud": ["x"]}}]}))
    r = cli(cfg, "list", check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for part in ("settings.request_dealy: unknown key (did you mean request_delay?)",
                 "settings.crawl_state.ticket_sise: unknown key (did you mean ticket_size?)",
                 "sites[a].max_dept: unknown key (did you mean max_depth?)",
                 "sites[a].colour: unknown key",
                 "sites[a].filters.exclud: unknown key (did you mean exclude?)"):
        assert part in lines[0], lines[0]


def test_help_shows_flags_without_a_type(tmp_path):
    for cmd in ([], ["prepare"], ["crawl"], ["status"]):
        r = subprocess.run([sys.executable, "-m", "sitemap_crawler", *cmd, "--help"],
                           capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert r.returncode == 0 and "Usage" in r.stdout
        assert "<bool>" not in r.stdout, r.stdout
        if not cmd:  # the command list is not cut off
            assert "..." not in r.stdout.split("Commands:")[-1], r.stdout


def test_counts_read_right_and_no_work_left_is_said_once(server, tmp_path):
    server.route("/start.html", Response(body=page_html(0)))  # no sitemap: link following
    cfg = write_config(tmp_path, server.url("/start.html"), follow_links=True, max_depth=0)
    r = cli(cfg, "prepare", "docs")
    assert "found 1 URL;" in r.stdout and "0 file(s)" not in r.stdout, r.stdout
    assert "1 ticket for 1 URL " in r.stdout, r.stdout
    cli(cfg, "work")
    r = cli(cfg, "work")
    assert (r.stdout + r.stderr).count("no work left") == 1, r.stdout + r.stderr


def test_an_interrupted_run_says_so_in_its_summary(server, tmp_path):
    doc_site(server, 30, delay=0.2)
    cfg = write_config(tmp_path, server.url("/"))
    cli(cfg, "prepare", "docs")
    p = popen_cli(cfg, "work", "--workers", "1")
    wait_until(lambda: len(server.requests) >= 6)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    summary = [line for line in out.splitlines() if line.startswith("docs: ")]
    assert len(summary) == 1 and "interrupted" in summary[0], out


def test_run_summary_is_the_last_log_line_when_crawls_prepare_fails(tmp_path):
    for cmd in (["crawl", "docs"], ["crawl-all"]):
        cfg = write_config(tmp_path, "http://127.0.0.1:9/sitemap.xml")  # nothing listens
        log = tmp_path / f"{cmd[0]}.jsonl"
        r = cli(cfg, "--log-file", str(log), *cmd, check=False)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        last = json.loads(log.read_text().splitlines()[-1])
        assert last.get("event") == "run_summary" and last["exit_code"] == 1, last
