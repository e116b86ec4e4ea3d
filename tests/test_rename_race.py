"""fsutil R2 on the real SMB share: a loser's rename that lands after the winner's.

Four processes, two on each mount of the share (two machines), rename the same sources to
their own names at the same moments, as workers claiming one ticket or one host token do.
Measured before R2: of 300 such races, 1-2 left both believing they had won."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest
from conftest import netfs_pair
from waiting import wait_until

from sitemap_crawler.protocol.fsutil import move_exclusive

SPAWN = mp.get_context("spawn")
N = 250
STEP = 0.08  # seconds between two races: both processes start each one at the same moment


def _racer(root: str, wid: str, start: float, out: str) -> None:
    won = []
    for i in range(N):
        while time.monotonic() < start + i * STEP:
            pass
        won.append(move_exclusive(Path(root) / f"tok-{i}.free",
                                  Path(root) / f"tok-{i}.held.{wid}"))
    Path(out).write_text(json.dumps(won))


@pytest.mark.netfs
def test_lockstep_renames_from_two_mounts_leave_one_winner_each(tmp_path):
    a, b = netfs_pair("smb")
    name = f"r-{os.getpid()}-{tmp_path.name}"
    (a / name).mkdir()
    try:
        for i in range(N):
            (a / name / f"tok-{i}.free").write_bytes(b"t")
        wait_until(lambda: len(os.listdir(b / name)) == N, 30, what="the tokens on mount B")
        start = time.monotonic() + 1.5
        racers = {"a1": a, "a2": a, "b1": b, "b2": b}
        procs = [SPAWN.Process(target=_racer, args=(str(root / name), wid, start,
                                                    str(tmp_path / wid)))
                 for wid, root in racers.items()]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
            assert p.exitcode == 0
        won = {wid: json.loads((tmp_path / wid).read_text()) for wid in racers}
        left = sorted(os.listdir(a / name))
    finally:
        for p in os.listdir(a / name):
            (a / name / p).unlink()
        (a / name).rmdir()
    winners = [[w for w in won if won[w][i]] for i in range(N)]
    assert [(i, ws) for i, ws in enumerate(winners) if len(ws) != 1] == []
    # the one who believes it won is the one whose name the token has on the server
    assert left == sorted(f"tok-{i}.held.{ws[0]}" for i, ws in enumerate(winners))
