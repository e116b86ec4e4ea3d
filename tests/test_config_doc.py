"""config.yaml documents every setting the code reads, each with a comment (issue 21, 19)."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import yaml

from sitemap_crawler.config import Settings

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"


def _fields(cls: type, prefix: str = "") -> list[str]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        out.append(prefix + f.name)
        if dataclasses.is_dataclass(hints[f.name]):
            out += _fields(hints[f.name], f"{prefix}{f.name}.")
    return out


def test_every_setting_is_in_config_yaml_with_a_comment():
    text = CONFIG.read_text()
    tree = yaml.safe_load(text)["settings"]
    missing, bare = [], []
    for path in _fields(Settings):
        node: typing.Any = tree
        for part in path.split("."):
            node = node.get(part, KeyError) if isinstance(node, dict) else KeyError
        if node is KeyError:
            missing.append(path)
            continue
        name = path.rsplit(".", 1)[-1]
        line = re.search(rf"^\s*{name}:.*$", text, re.M)
        inline = line is None  # a key of an inline mapping ({width: ..}): its parent's line
        if not inline and "#" not in line.group(0):
            bare.append(path)
    assert missing == [] and bare == []


def test_sizes_are_said_to_be_binary():
    assert "10MB = 10MiB" in CONFIG.read_text()


def test_one_version_everywhere():
    import tomllib

    import sitemap_crawler

    root = CONFIG.parent
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    assert sitemap_crawler.__version__ == version
    major_minor = ".".join(version.split(".")[:2])
    ua = yaml.safe_load(CONFIG.read_text())["settings"]["user_agent"]
    assert ua.startswith(f"sitemap-crawler/{major_minor} "), ua
    # the release the ROADMAP is working on (its first heading) is the version's
    current = re.search(r"^## v(\S+)", (root / "ROADMAP.md").read_text(), re.M)
    assert current is not None and version.startswith(current.group(1)), version


def test_readme_file_tree_names_every_module_and_documents_the_environment():
    readme = (CONFIG.parent / "README.md").read_text()
    how = readme.split("## How it works", 1)[1].split("```", 2)[1]  # the tree's code block
    pkg = CONFIG.parent / "sitemap_crawler"
    missing = sorted(str(p.relative_to(pkg)) for p in pkg.rglob("*.py")
                     if p.stem not in ("__init__", "__main__")
                     and not re.search(rf"\b{p.stem}\b", how))
    assert missing == []
    for needle in ("SITEMAP_CRAWLER_MACHINE_ID", "--watch", "10 MiB"):
        assert needle in readme, needle
