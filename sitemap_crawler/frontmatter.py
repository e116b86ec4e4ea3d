"""The YAML front matter at the top of every markdown file: written by convert, read back by
the url-index rebuild (protocol) and by the worker to tell which URL owns a file name.

A base module: every room may import it; it imports nothing of the package.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

try:  # libyaml's emitter is ~6x faster; the pure-Python one gives the same YAML
    _Dumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - depends on how pyyaml was built
    _Dumper = yaml.SafeDumper

def timestamp(value: datetime | str) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
            return value.strftime("%Y-%m-%dT%H:%M:%SZ")
        return value.isoformat(timespec="seconds")
    return value


def read_front_matter(path: Path, limit: int = 8192) -> dict[str, Any] | None:
    """The YAML front matter at the top of a markdown file we wrote, or None.

    Read back to rebuild a lost url-index and to tell which URL owns a file name.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(limit)
    except OSError:
        return None
    if not head.startswith("---\n"):
        return None
    end = head.find("\n---", 4)
    if end < 0:
        return None
    try:
        meta = yaml.safe_load(head[4:end])
    except yaml.YAMLError:
        return None
    return meta if isinstance(meta, dict) else None


def front_matter(fields: dict[str, Any]) -> str:
    """A ``---`` YAML block; any string (colons, quotes, newlines) loads back unchanged."""
    data = {k: v for k, v in fields.items() if v is not None}
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1 << 30)
    return f"---\n{body}---\n"
