"""The package's rooms import only what their ``__init__`` says they may (README "How it works").

Read from the real source with ``ast``: a new import that crosses a room's wall fails here,
so the layout stays the picture the README draws.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import sitemap_crawler

PKG = Path(sitemap_crawler.__file__).parent
BASE = {"sitemap_crawler", "sitemap_crawler.config", "sitemap_crawler.errors",
        "sitemap_crawler.logs", "sitemap_crawler.timestamps", "sitemap_crawler.frontmatter",
        "sitemap_crawler.xpath"}

# room -> module prefixes it may import besides the base modules and itself
ALLOWED = {
    "base": set(),
    "protocol": set(),
    "fetch": {"sitemap_crawler.protocol"},
    "discover": {"sitemap_crawler.fetch.decoding", "sitemap_crawler.fetch.netguard",
                 "sitemap_crawler.protocol.fsutil"},
    "convert": {"sitemap_crawler.protocol.fsutil"},
    "commands": {"sitemap_crawler.protocol", "sitemap_crawler.fetch",
                 "sitemap_crawler.discover", "sitemap_crawler.convert"},
    "demo": {"sitemap_crawler.protocol", "sitemap_crawler.fetch", "sitemap_crawler.discover",
             "sitemap_crawler.convert", "sitemap_crawler.commands"},
    "cli": {"sitemap_crawler."},
}


def _room(path: Path) -> str:
    rel = path.relative_to(PKG)
    if len(rel.parts) > 1:
        return rel.parts[0]
    return "cli" if rel.stem in ("cli", "__main__", "api") else "base"


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "sitemap_crawler":
                out += [f"sitemap_crawler.{a.name}" for a in node.names
                        if a.name != "__version__"]
            else:
                out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return [m for m in out if m.split(".")[0] == "sitemap_crawler"]


def _allowed(room: str, module: str) -> bool:
    own = f"sitemap_crawler.{room}"
    if module in BASE or module == own or module.startswith(own + "."):
        return True
    return any(module == p or module.startswith(p if p.endswith(".") else p + ".")
               for p in ALLOWED[room])


def test_every_module_imports_only_what_its_room_allows():
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        room = _room(path)
        if path.name == "__init__.py" and path.parent == PKG:
            continue  # the public API re-exports from every room, lazily
        wrong += [f"{path.relative_to(PKG)} ({room}) imports {m}"
                  for m in _imports(path) if not _allowed(room, m)]
    assert wrong == []


def test_every_room_says_what_it_is_for_and_what_it_may_import():
    for init in sorted(PKG.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert doc.startswith(f"{init.parent.name}:"), init
        assert "May import" in doc, init


def test_the_public_api_is_what_all_lists():
    names = set(sitemap_crawler.__all__)
    assert names == {"__version__", *sitemap_crawler._API}
    for name in names:
        assert getattr(sitemap_crawler, name) is not None


# import name -> the distribution pyproject.toml declares it under
_DIST = {"yaml": "pyyaml"}


def _third_party() -> dict[str, list[str]]:
    """Module imported -> the files importing it, for modules outside the stdlib and us."""
    out: dict[str, list[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     and node.level == 0 else [a.name for a in node.names]
                     if isinstance(node, ast.Import) else [])
            for m in names:
                if m.split(".")[0] not in sys.stdlib_module_names | {"sitemap_crawler"}:
                    out.setdefault(m, []).append(str(path.relative_to(PKG)))
    return out


def test_every_imported_package_is_declared_and_none_is_imported_privately():
    meta = tomllib.loads((PKG.parent / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[ ;]", d)[0].lower() for d in [
        *meta["dependencies"], *(d for ds in meta["optional-dependencies"].values()
                                 for d in ds)]}
    imported = _third_party()
    undeclared = {m: f for m, f in imported.items()
                  if _DIST.get(m.split(".")[0], m.split(".")[0]).lower() not in declared}
    private = {m: f for m, f in imported.items()
               if any(p.startswith("_") for p in m.split(".")[1:])}
    assert undeclared == {} and private == {}
    source = "\n".join(p.read_text() for p in PKG.rglob("*.py"))
    assert "httpx._main" not in source and "typer._click" not in source
