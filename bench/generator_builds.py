"""Generators that Debian does not ship built docs of: their sites are built here, locally.

- pdoc (from PyPI) over 20 standard-library modules: CPython's docstrings (PSF-2.0);
- TypeDoc (from the npm registry) over TypeDoc's own type declarations (Apache-2.0);
- VitePress and Starlight (Astro 5) over the README.md files of the npm packages installed
  for them (each under its package's licence, mostly MIT).  Raw HTML, relative images and
  ``{{`` are taken out of those READMEs first: Vue and Astro refuse them;
- MkDocs Material's blog plugin (the installed mkdocs-material) over 40 of those READMEs as
  posts: its index, archive and category pages are the corpus's listing pages.

Each builder installs what it needs into ``workdir/tools/NAME`` with the ordinary client
(``pip``/``npm``), writes the site into ``workdir/built/NAME`` and is skipped (with a line on
stderr) when the tool cannot be installed.  Needs Node 20+ for the npm ones.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

PDOC_MODULES = [
    "json", "csv", "argparse", "textwrap", "difflib", "fractions", "statistics", "heapq",
    "bisect", "shlex", "string", "pathlib", "dataclasses", "enum", "functools", "collections",
    "urllib.parse", "ipaddress", "zipfile", "sched"]


def _run(cmd: list[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _npm(tools: Path, *packages: str) -> None:
    tools.mkdir(parents=True, exist_ok=True)
    if not (tools / "package.json").exists():
        (tools / "package.json").write_text(json.dumps({"name": "corpus", "private": True,
                                                        "type": "module"}))
    if not (tools / "node_modules").exists():
        _run(["npm", "install", "--no-audit", "--no-fund", *packages], tools)


def clean_markdown(text: str) -> str:
    """A README that Vue/Astro accept: no raw HTML, no relative images, no ``{{``."""
    out, fence = [], False
    for line in text.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            fence = not fence
        elif not fence:
            line = re.sub(r"!\[[^\]]*\]\((?!https?:)[^)]*\)", "", line)
            line = re.sub(r"<[^>\n]*>?", "", line).replace("{{", "{ {").replace("}}", "} }")
        out.append(line)
    return "\n".join(out)


def _readmes(tools: Path, every: int, count: int) -> list[tuple[str, str]]:
    found = sorted(p for p in (tools / "node_modules").glob("**/README.md")
                   if (p.stat().st_size > 4000 and p.parent.parent.name in ("node_modules",))
                   or (p.stat().st_size > 4000 and p.parent.parent.name.startswith("@")))
    picked = found[::every][:count]
    return [(re.sub(r"[^a-z0-9]+", "-", str(p.parent.relative_to(tools / "node_modules"))
                    .lower()).strip("-"), p.read_text(errors="replace")) for p in picked]


def build_pdoc(tools: Path, out: Path) -> None:
    tools.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "pip", "install", "-q", "--target", str(tools), "pdoc"],
         tools.parent)
    env_path = str(tools)
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {env_path!r}); "
                    "from pdoc.__main__ import cli; cli()", "-o", str(out), *PDOC_MODULES],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def build_typedoc(tools: Path, out: Path) -> None:
    _npm(tools, "typedoc@0.28", "typescript@5")
    entry = "node_modules/typedoc/dist/types/index.d.ts"
    (tools / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"target": "es2022", "module": "nodenext",
                            "moduleResolution": "nodenext", "skipLibCheck": True},
        "files": [entry]}))
    _run(["npx", "typedoc", "--skipErrorChecking", "--out", str(out), entry], tools)


def build_vitepress(tools: Path, out: Path) -> None:
    _npm(tools, "vitepress@1.6")
    docs = tools / "docs"
    (docs / ".vitepress").mkdir(parents=True, exist_ok=True)
    (docs / ".vitepress" / "config.mjs").write_text(
        'export default { ignoreDeadLinks: true, title: "Corpus" }\n')
    for name, text in _readmes(tools, 1, 40):
        (docs / f"{name}.md").write_text(clean_markdown(text))
    _run(["npx", "vitepress", "build", "docs"], tools)
    shutil.copytree(docs / ".vitepress" / "dist", out)


def build_starlight(tools: Path, out: Path) -> None:
    _npm(tools, "astro@5", "@astrojs/starlight@0.34")
    (tools / "astro.config.mjs").write_text(
        "import { defineConfig } from 'astro/config';\n"
        "import starlight from '@astrojs/starlight';\n"
        "export default defineConfig({ integrations: [starlight({ title: 'Corpus' })] });\n")
    (tools / "src" / "content" / "docs").mkdir(parents=True, exist_ok=True)
    (tools / "src" / "content.config.ts").write_text(
        "import { defineCollection } from 'astro:content';\n"
        "import { docsLoader } from '@astrojs/starlight/loaders';\n"
        "import { docsSchema } from '@astrojs/starlight/schema';\n"
        "export const collections = { docs: defineCollection({ loader: docsLoader(), "
        "schema: docsSchema() }) };\n")
    for name, text in _readmes(tools, 3, 30):
        (tools / "src" / "content" / "docs" / f"{name}.md").write_text(
            f"---\ntitle: {name}\n---\n\n" + clean_markdown(text))
    _run(["npx", "astro", "build"], tools)
    shutil.copytree(tools / "dist", out)


def build_material_blog(tools: Path, out: Path) -> None:
    """Listing pages: MkDocs Material's blog plugin (the installed mkdocs-material) over 40
    posts made of the VitePress tools' READMEs, dated and put in 5 categories, each excerpt
    cut after its first paragraph; the blog's index, archive and category pages list them."""
    readmes = _readmes(tools.parent / "vitepress", 1, 40)
    if not readmes:
        raise OSError("build vitepress first (its READMEs are the posts)")
    docs = tools / "docs"
    (docs / "blog" / "posts").mkdir(parents=True, exist_ok=True)
    (docs / "index.md").write_text("# Corpus\n\nThe blog of the corpus.\n")
    (docs / "blog" / "index.md").write_text("# Blog\n")
    for i, (name, text) in enumerate(readmes):
        body = clean_markdown(text).split("\n\n")
        first = next((j for j, b in enumerate(body) if b.strip() and not b.startswith("#")), 0)
        body.insert(first + 1, "<!-- more -->")
        (docs / "blog" / "posts" / f"{name}.md").write_text(
            f"---\ndate: 2024-{1 + i % 12:02d}-{1 + i % 28:02d}\ncategories:\n"
            f"  - Topic {i % 5}\n---\n\n# {name}\n\n" + "\n\n".join(body))
    (tools / "mkdocs.yml").write_text(
        "site_name: Corpus\ntheme:\n  name: material\nplugins:\n  - blog:\n"
        "      pagination_per_page: 5\n")
    _run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(out)], tools)


BUILDERS: dict[str, Callable[[Path, Path], None]] = {
    "pdoc": build_pdoc, "typedoc": build_typedoc, "vitepress": build_vitepress,
    "starlight": build_starlight, "material-blog": build_material_blog,
}


def built(workdir: Path, name: str) -> Path | None:
    """The built site of ``name`` under ``workdir/built`` (built now if missing), or None."""
    out = workdir / "built" / name
    if out.exists():
        return out
    try:
        BUILDERS[name](workdir / "tools" / name, out)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"generator_builds: {name} not built ({e})", file=sys.stderr)
        return None
    return out
