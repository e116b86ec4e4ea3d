"""prepare's process without httpx's command line or httpcore's trio backend (fetch/lean.py).

Those extras are ~8 MiB of the 64 MiB a million-URL prepare may use (issue 22).  The
command runs as a real process against the local server; a wrapper prints the modules it
held at exit.  Only the extras installed here can be checked: none installed, nothing to see.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sites import doc_site, write_config

from sitemap_crawler.fetch.lean import EXTRAS

INSTALLED = [name for name in EXTRAS if importlib.util.find_spec(name) is not None]
pytestmark = pytest.mark.skipif(not INSTALLED, reason="none of httpx's extras is installed")

_AT_EXIT = r"""
import atexit, json, runpy, sys
extras = sys.argv[1].split(",")
atexit.register(lambda: print("MODULES " + json.dumps([m for m in extras if m in sys.modules])))
sys.argv = ["sitemap-crawler", *sys.argv[2:]]
runpy.run_module("sitemap_crawler", run_name="__main__")
"""


def _loaded_at_exit(*args: str) -> list[str]:
    r = subprocess.run([sys.executable, "-c", _AT_EXIT, ",".join(INSTALLED), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("MODULES "))
    return json.loads(line[len("MODULES "):])


def test_prepare_runs_without_httpx_command_line_and_trio(server, tmp_path: Path):
    doc_site(server, 30)
    cfg = write_config(tmp_path, server.url("/sitemap.xml"))
    assert _loaded_at_exit("--config", str(cfg), "prepare", "docs") == []
    assert list((tmp_path / "out").rglob("*.json"))  # it did prepare: tickets were written


_IMPORT = r"""
import sys, threading
from sitemap_crawler.fetch.lean import EXTRAS, import_http
if sys.argv[1] == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
done = import_http()
held = [m for m in EXTRAS if m in sys.modules]
import httpx
with httpx.Client() as c:
    pass
for m in EXTRAS:
    __import__(m)  # importable again once httpx is in
print(done, held)
"""


@pytest.mark.parametrize("threads, expect", [("one", "True []"), ("thread", "False")])
def test_the_extras_stay_importable_and_a_second_thread_turns_it_off(threads: str,
                                                                      expect: str):
    if len(INSTALLED) < len(EXTRAS):
        pytest.skip("needs every extra installed")
    r = subprocess.run([sys.executable, "-c", _IMPORT, threads], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(expect), r.stdout
