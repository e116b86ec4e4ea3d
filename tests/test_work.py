"""`work` end to end: real worker processes, a real HTTP server, real signals, real shares."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from sites import cli, doc_site, on_two_machines, popen_cli, read_index, write_config
from waiting import wait_until

from sitemap_crawler.protocol.heartbeat import read_heartbeat
from sitemap_crawler.protocol.journal import read_journal
from sitemap_crawler.protocol.state import hostname, machine_token
from sitemap_crawler.protocol.tickets import TicketName


def state_dir(out: Path) -> Path:
    return out / ".crawl-state" / "docs"


def front_matter(path: Path) -> dict:
    text = path.read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text[4:text.index("\n---", 4)])


def completed_ids(out: Path) -> Counter[str]:
    names = os.listdir(state_dir(out) / "tickets" / "completed")
    return Counter(TicketName.parse(n).ticket_id for n in names if TicketName.parse(n))


def page_hits(server) -> Counter[str]:
    return Counter(r.path for r in server.requests if r.path.startswith("/docs/"))


def assert_pages_fetched(server, urls: list[str], twice_at_most: int = 0) -> None:
    """The server saw a request for every page, and a second one for at most
    ``twice_at_most`` pages: those a killed or paused worker had in flight, which the
    ticket's next owner sends again."""
    hits = page_hits(server)
    assert set(hits) == {urlsplit(u).path for u in urls}, sorted(hits)
    again = sorted(p for p, n in hits.items() if n > 1)
    assert len(again) <= twice_at_most and max(hits.values()) <= 2, again


def assert_all_crawled(out: Path, urls: list[str]) -> dict:
    idx = read_index(state_dir(out))
    missing = [u for u in urls if u not in idx]
    assert not missing, f"{len(missing)} URLs missing from url-index.json"
    for u in urls:
        md = out / "md" / idx[u]["file_path"]
        assert md.exists(), md
        assert front_matter(md)["url"] == u
    torn = [p for p in out.rglob(".tmp-*")]
    assert not torn, torn
    return idx


def journal_lines(out: Path) -> int:
    d = state_dir(out) / "journal"
    if not d.exists():
        return 0
    return sum(p.read_bytes().count(b"\n") for p in d.iterdir())


def busy_worker(out: Path) -> tuple[str, int]:
    """(worker id, pid) of a worker that holds a ticket right now."""
    for p in (state_dir(out) / "workers").glob("*.lock"):
        hb = read_heartbeat(p)
        if hb and hb.get("ticket"):
            return hb["worker_id"], hb["pid"]
    return None  # type: ignore[return-value]


def test_crawl_end_to_end(server, tmp_path):
    urls = doc_site(server, 12)
    cfg = write_config(tmp_path, server.url("/"))
    r = cli(cfg, "crawl", "docs", "--workers", "2")
    assert "12 URLs" in r.stdout and "new 12" in r.stdout, r.stdout
    out = tmp_path / "out"
    idx = assert_all_crawled(out, urls)
    e = idx[urls[3]]
    assert e["status_code"] == 200 and e["etag"] and e["content_hash"].startswith("sha256:")
    md = (out / "md" / e["file_path"]).read_text()
    assert "# Page 3" in md and "```python" in md and "| Option | Meaning |" in md
    assert "Generated at" not in md and "Home" not in md  # footer and header nav are gone
    fm = front_matter(out / "md" / e["file_path"])
    assert fm["title"] == "Page 3" and fm["status"] == 200 and fm["fetched_at"]
    st = json.loads(cli(cfg, "status", "docs", "--json").stdout)
    assert st["tickets"] == {"completed": 3, "claimed": 0, "failed": 0, "pending": 0}
    assert st["urls_remaining"] == 0 and st["index_urls"] == 12
    assert_pages_fetched(server, urls)


def test_sigkill_of_a_worker_mid_ticket_loses_nothing(server, tmp_path):
    urls = doc_site(server, 60, delay=0.04)
    # 3 fetch threads: a URL holds its thread from its request to its journal record, so
    # at most 3 URLs of the killed worker are started and not recorded
    cfg = write_config(tmp_path, server.url("/"), max_in_flight=3)
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    p = popen_cli(cfg, "work", "--workers", "3")
    wait_until(lambda: journal_lines(out) >= 8)
    wid, pid = wait_until(lambda: busy_worker(out))
    os.kill(pid, signal.SIGKILL)
    p.communicate(timeout=180)
    assert p.returncode == 0  # the other workers finished what the killed one held
    assert_all_crawled(out, urls)
    # Only the URLs on the killed worker's threads are fetched a second time (D4).  (Not
    # the host's 3 requests in flight (D1): a page whose request is over still converts
    # on its thread; on a loaded machine a whole ticket of 5 was seen fetched twice.)
    assert_pages_fetched(server, urls, twice_at_most=3)
    ids = completed_ids(out)
    assert len(ids) == 12 and max(ids.values()) == 1
    # heartbeat H7 / index J2: reclaimed and merged, so nothing of the dead worker is left
    assert not list((state_dir(out) / "workers").glob(f"{wid}.*"))
    assert not list((state_dir(out) / "journal").glob(f"{wid}*"))
    assert not os.listdir(state_dir(out) / "tickets" / "claimed")


def test_work_whose_only_worker_is_killed_exits_1_not_0(server, tmp_path):
    """Found by bench/soak.py: `crawl --workers 1` whose worker got SIGKILL said 0 (done)
    with its ticket still in claimed/; the next run finishes the job."""
    urls = doc_site(server, 20, delay=0.05)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    p = popen_cli(cfg, "work", "--workers", "1")
    wait_until(lambda: journal_lines(out) >= 2)
    _wid, pid = wait_until(lambda: busy_worker(out))
    os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    assert "work is left" in err and "sitemap-crawler work docs" in err
    cli(cfg, "work", "--workers", "1")
    assert_all_crawled(out, urls)


def test_sigstop_past_the_timeout_then_sigcont_completes_nothing_twice(server, tmp_path):
    urls = doc_site(server, 40, delay=0.05)
    cfg = write_config(tmp_path, server.url("/"), crawl_state={"heartbeat_timeout": 1.5})
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    p = popen_cli(cfg, "work", "--workers", "2")
    wait_until(lambda: journal_lines(out) >= 4)
    wid, pid = wait_until(lambda: busy_worker(out))
    claimed = state_dir(out) / "tickets" / "claimed"
    os.kill(pid, signal.SIGSTOP)
    # stopped: it sends and journals nothing more until SIGCONT
    time.sleep(0.5)
    journaled = {urlsplit(rec["url"]).path
                 for rec in read_journal(state_dir(out) / "journal" / f"{wid}.jsonl")
                 if rec.get("final")}
    try:
        mine = [claimed / n for n in os.listdir(claimed)
                if (t := TicketName.parse(n)) and t.owner == wid]
        frozen = {TicketName.parse(f.name).ticket_id for f in mine}
        # the pages of its tickets it had not finished: the only ones it may have in flight
        open_pages = {urlsplit(e["url"]).path for f in mine
                      for e in json.loads(f.read_bytes())["urls"]} - journaled
        # The other worker sees the frozen heartbeat and takes the ticket back...
        wait_until(lambda: not any(n.endswith(f"_{wid}.json") for n in os.listdir(claimed)), 60)
        # ...and is at work on it (or done with it) when the frozen one wakes up.
        wait_until(lambda: frozen <= set(completed_ids(out)) | {
            n.ticket_id for n in map(TicketName.parse, os.listdir(claimed)) if n}, 60)
    finally:
        os.kill(pid, signal.SIGCONT)
    p.communicate(timeout=180)
    assert_all_crawled(out, urls)
    # Sent twice at most, and only pages it had in flight when it froze: pages of its
    # tickets, not journaled, at most one per request it may have open (8 per host).  A
    # request that passed W1 just before the freeze leaves after SIGCONT: that is in flight
    # too (D4, D6); on waking it waits for the share and checks that it owns the ticket
    # before each new request (W1, dispatch.py D6), so nothing else goes twice.
    hits = page_hits(server)
    again = {p for p, n in hits.items() if n > 1}
    assert again <= open_pages, (again, open_pages)
    assert_pages_fetched(server, urls, twice_at_most=8)
    ids = completed_ids(out)
    assert len(ids) == 8 and max(ids.values()) == 1, ids


def test_sigint_hands_tickets_back_and_the_next_run_repeats_nothing(server, tmp_path):
    urls = doc_site(server, 40, delay=0.05)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    p = popen_cli(cfg, "work", "--workers", "2")
    wait_until(lambda: journal_lines(out) >= 6)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    assert p.returncode == 130  # interrupted, so cron and scripts can tell
    st = state_dir(out) / "tickets"
    assert not os.listdir(st / "claimed")
    handed_back = [n for n in os.listdir(st / "pending") if TicketName.parse(n).gen > 0]
    assert handed_back, "an interrupted ticket should be back in pending/ with its progress"
    first = sum(page_hits(server).values())
    assert 0 < first < 40
    cli(cfg, "work", "--workers", "2")
    assert_all_crawled(out, urls)
    assert_pages_fetched(server, urls)


def test_two_work_commands_on_one_state_dir(server, tmp_path):
    urls = doc_site(server, 40, delay=0.02)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    procs = [popen_cli(cfg, "work", "--workers", "2") for _ in range(2)]
    for p in procs:
        p.communicate(timeout=180)
        assert p.returncode == 0
    assert_all_crawled(out, urls)
    ids = completed_ids(out)
    assert len(ids) == 8 and max(ids.values()) == 1
    assert_pages_fetched(server, urls)


@pytest.mark.netfs
def test_two_machines_on_a_real_share(share, server, tmp_path):
    a, b, kind = share
    urls = doc_site(server, 30, delay=0.02)
    on_two_machines(tmp_path, a, b, lambda d, out: write_config(d, server.url("/"), out=out),
                    timeout=240)
    assert_all_crawled(a / "out", urls)
    ids = completed_ids(a / "out")
    assert len(ids) == 6 and max(ids.values()) == 1, (kind, ids)
    assert_pages_fetched(server, urls)


def test_second_ctrl_c_within_3s_exits_at_once_and_the_next_run_finishes(server, tmp_path):
    urls = doc_site(server, 12, delay=1.0)  # a graceful stop would wait ~1 s for the request
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    p = popen_cli(cfg, "work", "--workers", "2")
    wait_until(lambda: journal_lines(out) >= 1)
    # both workers are inside a 1 s request, with most of it still to go
    wait_until(lambda: sum(time.monotonic() - q.t < 0.5 for q in server.requests
                           if q.path.startswith("/docs/")) >= 2, 10)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=30)
    assert p.returncode == 130
    assert time.monotonic() - t0 < 0.9  # did not wait for the in-flight requests
    # every answer takes 1 s: the requests started in the last second were cut off
    cut = sum(q.path.startswith("/docs/") and q.t > t0 - 1.0 for q in server.requests)
    assert cut >= 2
    cli(cfg, "work", "--workers", "2")  # the killed workers' tickets are taken back
    assert_all_crawled(out, urls)
    assert_pages_fetched(server, urls, twice_at_most=cut)  # the cut-off requests only
    assert not os.listdir(state_dir(out) / "tickets" / "claimed")


def test_log_file_has_one_json_event_per_url_with_worker_ticket_and_url(server, tmp_path):
    urls = doc_site(server, 6)
    cfg = write_config(tmp_path, server.url("/"))
    log = tmp_path / "crawl.jsonl"
    r = cli(cfg, "--log-file", str(log), "crawl", "docs", "--workers", "2")
    assert not any(u in r.stderr for u in urls)  # per-URL events stay off the console
    events = [json.loads(line) for line in log.read_text().splitlines()]
    per_url = [e for e in events if e.get("outcome") == "new"]
    assert sorted(e["url"] for e in per_url) == sorted(urls)
    assert_pages_fetched(server, urls)
    for e in per_url:
        assert e["worker"] and e["ticket"] and e["status"] == 200 and e["level"] == "info"


def test_a_corrupt_url_index_is_reported_and_rebuilt_from_front_matter(server, tmp_path):
    urls = doc_site(server, 8)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "crawl", "docs", "--workers", "2")
    index_path = state_dir(out) / "url-index.json"
    index_path.write_bytes(index_path.read_bytes()[:100])  # torn by something outside us
    n = len(server.requests)
    r = cli(cfg, "crawl", "docs", "--workers", "2")
    assert "corrupt url-index" in r.stderr and "rebuilt 8 entries" in r.stderr, r.stderr
    assert list(state_dir(out).glob("url-index.corrupt.*.json"))  # kept for inspection
    again = [q for q in server.requests[n:] if q.path.startswith("/docs/")]
    assert len(again) == 8 and all("if-none-match" in q.headers for q in again)
    assert "unchanged 8 (304)" in r.stdout, r.stdout
    idx = read_index(state_dir(out))
    assert all(u in idx for u in urls)


def test_a_dead_workers_temporary_files_go_when_its_tickets_are_taken_back(server, tmp_path):
    """A worker killed mid-write leaves ``.tmp-*`` files (a page, a name claim); the worker
    that takes its tickets back removes them, and only them (another pid's stay)."""
    urls = doc_site(server, 12, delay=0.02)
    cfg = write_config(tmp_path, server.url("/"))
    out = tmp_path / "out"
    cli(cfg, "prepare", "docs")
    st = state_dir(out)
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    wid = f"{hostname()}-{machine_token()}-{dead.pid}-abcdef"
    pending = sorted(os.listdir(st / "tickets" / "pending"))
    os.rename(st / "tickets" / "pending" / pending[0],
              st / "tickets" / "claimed" / pending[0].replace(".json", f"_{wid}.json"))
    (st / "tmp").mkdir(exist_ok=True)
    (st / "journal").mkdir(exist_ok=True)
    (st / "names" / "ab").mkdir(parents=True, exist_ok=True)
    left = [st / "tmp" / f".tmp-page.md.{dead.pid}.0123abcd",
            st / "journal" / f".tmp-{wid}.jsonl.{dead.pid}.89abcdef"]
    for f in left:
        f.write_text("half")
    (st / "names" / "ab" / f".tmp-cdef.{dead.pid}.01234567").mkdir()
    other = st / "tmp" / f".tmp-page.md.{os.getpid()}.0123abcd"
    other.write_text("not the dead one's")
    dead.kill()
    dead.wait()
    cli(cfg, "work", "--workers", "1")
    assert_all_crawled_but(out, urls, other)
    assert other.exists()


def assert_all_crawled_but(out: Path, urls: list[str], allowed: Path) -> None:
    idx = read_index(state_dir(out))
    assert all(u in idx for u in urls)
    torn = [p for p in out.rglob(".tmp-*") if p != allowed]
    assert not torn, torn
