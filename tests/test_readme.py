"""The README's Python API example runs as written (in a fresh directory, as a user would)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_python_api_example_runs(tmp_path):
    text = README.read_text()
    section = text[text.index("## Python API"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.search(r"pages written to .*api-demo", r.stdout), r.stdout
    assert int(lines[1].split()[0]) > 30  # 30 pages + home, sections, specials
    assert "rows exported" in r.stdout
    assert lines[-1].startswith("Hello | # Hello"), lines[-1]
    rows = [json.loads(x) for x in (tmp_path / "api-demo" / "urls.jsonl").read_text().splitlines()]
    assert {r["outcome"] for r in rows} >= {"written"}
    assert sum(1 for r in rows if r["outcome"] == "written") == int(lines[1].split()[0])
    # The README's DuckDB query runs on that export.
    import duckdb

    sql = re.search(r"```sql\n(.*?)```", text, re.S).group(1)
    sql = sql.replace("'urls.jsonl'", f"'{tmp_path / 'api-demo' / 'urls.jsonl'}'")
    got = duckdb.connect().execute(sql).fetchall()
    assert got and all(outcome != "written" for outcome, _reason, _n in got)
