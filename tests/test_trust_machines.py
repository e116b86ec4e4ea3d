"""Issue 8 case 3: two machines whose host names share the first label never judge each other's
live workers dead; and "local" (heartbeat H3) is proven by machine id, boot and pid namespace,
never guessed from a name.  Two machines are simulated with real Linux namespaces (their own
host name and pids, as on another machine) and SITEMAP_CRAWLER_MACHINE_ID."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sites import cli, doc_site, read_index, write_config

from sitemap_crawler.protocol.heartbeat import Observer, pid_alive
from sitemap_crawler.protocol.state import (
    MACHINE_ENV,
    hostname,
    machine_token,
    new_worker_id,
    parse_worker_id,
)
from sitemap_crawler.protocol.tickets import TicketName


def test_worker_id_names_the_full_host_and_the_machine_and_fits_ticket_names():
    wid = new_worker_id()
    assert re.fullmatch(r"[A-Za-z0-9.-]+", wid) and len(wid) <= 70, wid
    parts = parse_worker_id(wid)
    assert parts is not None and parts.pid == os.getpid()
    assert parts.host == hostname() and parts.machine == machine_token()
    name = TicketName("20261121T1200ab-00001", 3, wid)
    assert TicketName.parse(name.file(wid)) == name


def test_machine_token_differs_with_the_machine_id_override(monkeypatch):
    monkeypatch.setenv(MACHINE_ENV, "machine-a")
    a = machine_token()
    monkeypatch.setenv(MACHINE_ENV, "machine-b")
    assert machine_token() != a


def test_a_killed_worker_that_is_still_a_zombie_is_dead(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    wid = f"{hostname()}-{machine_token()}-{p.pid}-abcdef"
    obs = Observer(tmp_path, timeout=3600)
    assert obs.local_verdict(wid) is True
    os.kill(p.pid, signal.SIGKILL)
    t0 = time.monotonic()
    while Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() - t0 < 10
        time.sleep(0.01)
    try:  # not reaped yet: kill(pid, 0) still succeeds
        assert not pid_alive(p.pid)
        assert obs.is_dead(wid)  # H3, at once
    finally:
        p.wait()


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    r = subprocess.run(["unshare", "--uts", "--pid", "--fork", "--mount-proc", "true"],
                       capture_output=True)
    return r.returncode == 0


def machine_cmd(host: str, config: Path, *args: str) -> list[str]:
    """The CLI on a simulated machine: own host name (UTS), own pids (PID namespace)."""
    return ["unshare", "--uts", "--pid", "--fork", "--mount-proc", "sh", "-c",
            'hostname "$0" && exec "$@"', host,
            sys.executable, "-m", "sitemap_crawler", "--config", str(config), *args]


def machine_env(machine: str) -> dict[str, str]:
    return {**os.environ, MACHINE_ENV: machine}


@pytest.mark.skipif(not _namespaces_work(), reason="needs root for unshare")
def test_two_machines_sharing_a_first_label_do_not_kill_each_others_work(server, tmp_path):
    urls = doc_site(server, 40, delay=0.06)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    hosts = {"node1.us.example": "machine-us", "node1.eu.example": "machine-eu"}
    procs = [subprocess.Popen(machine_cmd(h, cfg, "work", "--workers", "2"),
                              env=machine_env(m), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for h, m in hosts.items()]
    workers = out / ".crawl-state" / "docs" / "workers"
    t0 = time.monotonic()
    while len(list(workers.glob("*.lock"))) < 4:
        assert time.monotonic() - t0 < 60, "the four workers did not start"
        time.sleep(0.05)
    st = subprocess.run(machine_cmd("node1.us.example", cfg, "status", "docs", "--json"),
                        env=machine_env("machine-us"), capture_output=True, text=True,
                        timeout=120)
    assert st.returncode == 0, st.stderr
    status = json.loads(st.stdout)
    for p in procs:
        _out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    called_dead = [w["worker_id"] for w in status["workers"] if w["alive"] is False]
    assert called_dead == [] and status["dead_workers"] == [], status
    hits = Counter(r.path for r in server.requests if r.path.startswith("/docs/"))
    assert len(hits) == 40 and max(hits.values()) == 1, hits.most_common(3)
    done = os.listdir(out / ".crawl-state" / "docs" / "tickets" / "completed")
    assert sorted(TicketName.parse(n).ticket_id for n in done) == sorted(
        {TicketName.parse(n).ticket_id for n in done})
    assert not list(workers.glob("*.dead"))
    idx = read_index(out / ".crawl-state" / "docs")
    assert sorted(idx) == sorted(urls)
