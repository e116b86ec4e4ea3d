from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from httpserver import LocalServer


@pytest.fixture
def server():
    # The server stamps each request's arrival in this process; a full garbage collection
    # of everything earlier tests left (tens of ms) would stamp one late and make a
    # politeness gap look short.  Frozen objects are not scanned again.
    gc.collect()
    gc.freeze()
    try:
        with LocalServer() as srv:
            yield srv
    finally:
        gc.unfreeze()


# --- real network shares (../shared/netfs) ------------------------------------------------
import os  # noqa: E402
import subprocess  # noqa: E402

NETFS_SCRIPTS = Path(__file__).resolve().parents[1].parent / "shared" / "netfs"
NETFS_DIR = Path(os.environ.get("NETFS_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                            "netfs")))


def _mounted(path: Path) -> bool:
    """Mounted and answering: a mount whose client daemon died is still listed in
    /proc/mounts, but every call on it fails with ENOTCONN."""
    try:
        if f" {path} fuse" not in Path("/proc/mounts").read_text():
            return False
        os.stat(path)
    except OSError:
        return False
    return True


def netfs_pair(kind: str) -> tuple[Path, Path]:
    """Mount A and mount B of one real share ('smb' or 'sshfs'), brought up if needed.

    Skips the test when the share cannot be brought up on this machine; in CI, .ci/run
    brings both up first and sets SITEMAP_CRAWLER_REQUIRE_NETFS=1 so a skip becomes a failure.
    """
    a, b = NETFS_DIR / "mnt" / f"{kind}-a", NETFS_DIR / "mnt" / f"{kind}-b"
    if not (_mounted(a) and _mounted(b)):
        script = NETFS_SCRIPTS / f"setup-{kind}.sh"
        if script.exists():
            up = subprocess.run(["bash", str(script), "up"], capture_output=True, timeout=300)
            if up.returncode != 0:  # a stale mount left by a dead daemon: down, then up again
                subprocess.run(["bash", str(script), "down"], capture_output=True, timeout=120)
                subprocess.run(["bash", str(script), "up"], capture_output=True, timeout=300)
    if not (_mounted(a) and _mounted(b)):
        if os.environ.get("SITEMAP_CRAWLER_REQUIRE_NETFS") == "1":
            pytest.fail(f"{kind} share is not mounted at {a} and {b}")
        pytest.skip(f"{kind} share not available")
    return a, b


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the real shares run one at a time, in one test process (pyproject's
    ``-n``, ``--dist loadgroup``): one FUSE daemon serves each share, and a test that times
    heartbeats across two mounts must not wait behind another test's traffic."""
    for item in items:
        if "netfs" in item.keywords or "share" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("netfs"))


@pytest.fixture(params=["smb", "sshfs"])
def share(request, tmp_path):
    """(dir on mount A, same dir on mount B, kind): one fresh directory on a real share."""
    a, b = netfs_pair(request.param)
    name = f"t-{os.getpid()}-{tmp_path.name}"
    (a / name).mkdir()
    yield a / name, b / name, request.param
    subprocess.run(["rm", "-rf", str(a / name)], capture_output=True, timeout=120)
