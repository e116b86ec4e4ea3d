"""Issue 20, hostile input that must stay bounded: config.yaml (alias bombs, recursive
aliases, size), stacked Content-Encodings and charset labels the bytes contradict.  Each
case goes through the real CLI against a real 127.0.0.1 server."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
import yaml
from httpserver import LocalServer, Response
from sites import cli, doc_site, page_html, popen_cli, read_index, write_config
from waiting import wait_until

BOMB = "\n".join(
    ["settings:", "  base_output_dir: ./out", "x0: &x0 ['${HOME}', '${HOME}', '${HOME}', "
     "'${HOME}', '${HOME}', '${HOME}', '${HOME}', '${HOME}', '${HOME}']"]
    + [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 12)]
    + ["sites: []", ""])


def _bad_config(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    return cfg


@pytest.mark.parametrize("text, says", [
    (BOMB.replace("sites: []", "sites: [*x11]"), "alias bomb"),
    ("settings: &s {base_output_dir: ./out, crawl_state: *s}\nsites: []\n", "recursive"),
    ("settings:\n  do_not_crawl: &a [*a]\nsites: []\n", "recursive"),
    ("settings: {}\nsites: " + "[" * 20000 + "]" * 20000 + "\n", "nested"),
    ("settings: {}\n#" + "x" * (2 << 20) + "\nsites: []\n", "larger than"),
], ids=["bomb", "recursive-mapping", "recursive-list", "deep", "huge"])
def test_a_hostile_config_is_one_line_and_exit_2(tmp_path, text, says):
    cfg = _bad_config(tmp_path, text)
    t0 = time.monotonic()
    r = cli(cfg, "list", check=False, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert time.monotonic() - t0 < 30
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and says in lines[0], r.stderr[-2000:]


def test_a_bomb_sent_by_sighup_keeps_the_old_config_and_the_crawl_ends_well(tmp_path):
    with LocalServer() as srv:
        doc_site(srv, 30, delay=0.1)
        cfg = write_config(tmp_path, srv.url("/sitemap.xml"))
        cli(cfg, "prepare", "docs")
        log = tmp_path / "crawl.log"
        good = cfg.read_text()
        p = popen_cli(cfg, "--log-file", str(log), "work", "docs", "-w", "1")
        try:
            wait_until(lambda: len([r for r in srv.requests if "/docs/" in r.path]) >= 3,
                       what="the first pages")
            cfg.write_text(good.replace("sites:", "bomb: &b [*b]\nsites:"))
            p.send_signal(signal.SIGHUP)
            _out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
    assert p.returncode == 0, err
    refusals = [ln for ln in err.splitlines() if "config not reloaded" in ln]
    assert len(refusals) == 1 and "recursive" in refusals[0], err
    assert "Traceback" not in err
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["event"] == "run_summary" and last["exit_code"] == 0
    assert len(read_index(tmp_path / "out" / ".crawl-state" / "docs")) == 30
