"""`demo --serve-only` serves where config.yaml's local-demo site looks (issue 21, item 5)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import yaml
from sites import cli

from sitemap_crawler.demo.run import SERVE_PORT

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


def _local_demo(cfg: dict) -> dict:
    return next(s for s in cfg["sites"] if s["name"] == "local-demo")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_serve_only_and_crawl_local_demo_agree(tmp_path):
    cfg = yaml.safe_load(CONFIG.read_text())
    assert _local_demo(cfg)["source"] == f"http://127.0.0.1:{SERVE_PORT}/"
    # the default port when it is free (as a user runs it), else --port with another one
    port, extra = SERVE_PORT, []
    if not _free(SERVE_PORT):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        extra = ["--port", str(port)]
        _local_demo(cfg)["source"] = f"http://127.0.0.1:{port}/"
    srv = subprocess.Popen(
        [sys.executable, "-m", "sitemap_crawler", "demo", "--serve-only", "--pages", "20",
         "--output", str(tmp_path / "demo"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = srv.stdout.readline()
        assert f"127.0.0.1:{port}/" in line and "Ctrl+C" in line, line + srv.stderr.read()
        cfg["settings"]["base_output_dir"] = str(tmp_path / "out")
        cfg["sites"] = [_local_demo(cfg)]
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(cfg))
        r = cli(path, "crawl", "local-demo", "--workers", "2")
        assert "new 0" not in r.stdout, r.stdout
        assert list((tmp_path / "out").rglob("*.md")), r.stdout
    finally:
        srv.send_signal(signal.SIGINT)
        srv.communicate(timeout=30)


def test_a_busy_port_asked_for_is_one_line_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "sitemap_crawler", "demo", "--serve-only",
                            "--port", str(port), "--output", str(tmp_path / "demo")],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot serve on 127.0.0.1:{port}" in lines[0], r.stderr
