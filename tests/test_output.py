"""URL → file mapping and writing, with real files under tmp_path."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest

from sitemap_crawler.convert.output import (
    MAX_FILE_NAME_BYTES,
    OutputLayout,
    resolved,
    safe_component,
    short_hash,
    write_if_changed,
)
from sitemap_crawler.errors import CrawlError


@pytest.fixture
def base(tmp_path: Path) -> Path:
    d = tmp_path / "out" / "site"
    d.mkdir(parents=True)
    return d


@pytest.fixture
def layout(base: Path) -> OutputLayout:
    return OutputLayout(base)


@pytest.mark.parametrize("url,expected", [
    ("https://docs.example.com/", "docs.example.com/index.md"),
    ("https://Docs.Example.COM", "docs.example.com/index.md"),
    ("https://docs.example.com/guide/", "docs.example.com/guide/index.md"),
    ("https://docs.example.com/guide/intro", "docs.example.com/guide/intro.md"),
    ("https://docs.example.com/guide/intro.html", "docs.example.com/guide/intro.md"),
    ("https://docs.example.com/a/index.htm", "docs.example.com/a/index.md"),
    ("https://docs.example.com/x.php", "docs.example.com/x.md"),
    ("https://docs.example.com/Default.ASPX", "docs.example.com/Default.md"),
    ("https://docs.example.com/README.md", "docs.example.com/README.md"),
    ("https://docs.example.com/llms.txt", "docs.example.com/llms.txt.md"),
    ("https://docs.example.com/v1.2", "docs.example.com/v1.2.md"),
    ("https://docs.example.com/a/b/../c", "docs.example.com/a/c.md"),
    ("https://docs.example.com/a/./b", "docs.example.com/a/b.md"),
    ("https://docs.example.com/a//b", "docs.example.com/a/b.md"),
    ("https://docs.example.com/page#section", "docs.example.com/page.md"),
    ("https://docs.example.com/caf%C3%A9/na%C3%AFve", "docs.example.com/café/naïve.md"),
    ("https://docs.example.com/a%20b", "docs.example.com/a b.md"),
    ("https://docs.example.com/bad%FFbyte", "docs.example.com/bad%FFbyte.md"),
    ("https://docs.example.com:443/x", "docs.example.com/x.md"),
    ("http://docs.example.com:80/x", "docs.example.com/x.md"),
    ("http://127.0.0.1:8080/x", "127.0.0.1_8080/x.md"),
    ("https://docs.example.com:80/x", "docs.example.com_80/x.md"),
    ("http://[::1]:8080/x", "__1_8080/x.md"),
])
def test_path_for(layout, url, expected):
    assert layout.path_for(url).as_posix() == expected


def test_query_string_becomes_a_hash_suffix(layout):
    p1 = layout.path_for("https://h.example/page?id=1")
    p2 = layout.path_for("https://h.example/page?id=2")
    assert p1.as_posix() == f"h.example/page__q-{short_hash('id=1')}.md"
    assert p1 != p2 and p1 == layout.path_for("https://h.example/page?id=1#frag")
    assert layout.path_for("https://h.example/dir/?x=y").as_posix() == (
        f"h.example/dir/index__q-{short_hash('x=y')}.md")
    assert layout.path_for("https://h.example/page.html?id=1").name == p1.name


def test_template_fields(base):
    lay = OutputLayout(base, "{site}/{date}/{domain}/{path}.md", site="docs",
                       today=date(2024, 5, 6))
    assert lay.path_for("https://h.example/a/b.html").as_posix() == (
        "docs/2024-05-06/h.example/a/b.md")
    flat = OutputLayout(base, "../../{domain}/C:/{path}.md")
    rel = flat.path_for("https://h.example/x")
    assert rel.as_posix() == "_/_/h.example/C_/x.md"


def test_same_url_same_path_on_every_machine(tmp_path):
    urls = [f"https://h.example/{p}" for p in
            ("a/", "a/index.html", "A", "a", "b?x=1", "%2e%2e/c", "con", "é" * 300)]
    a = OutputLayout(tmp_path / "machine-a")
    b = OutputLayout(tmp_path / "machine-b", today=date(2001, 1, 1))
    assert [a.path_for(u) for u in urls] == [b.path_for(u) for u in reversed(urls)][::-1]


# --- hostile URLs ----------------------------------------------------------------------------

HOSTILE = [
    "http://h.example/../../etc/passwd",
    "http://h.example/..",
    "http://h.example/../",
    "http://h.example/%2e%2e/%2e%2e/etc/passwd",
    "http://h.example/%2E%2E/%2E%2E/etc/passwd",
    "http://h.example/%2E./x",
    "http://h.example/.%2e/x",
    "http://h.example/..%2f..%2f..%2fetc%2fpasswd",
    "http://h.example/..%2F..%2Fetc",
    "http://h.example/..%5c..%5cwindows%5csystem32",
    "http://h.example/..\\..\\windows\\win.ini",
    "http://h.example/a/b/../../../../../x",
    "http://h.example/%252e%252e/%252e%252e/x",
    "http://h.example/./././x",
    "http://h.example//etc/passwd",
    "http://h.example/..%00/x",
    "http://h.example/%00",
    "http://h.example/...",
    "http://h.example/ ../x",
    "http://h.example/.. /x",
    "http://h.example/%c0%ae%c0%ae/x",
    "http://h.example/" + "../" * 100 + "x",
    "http://..%2f..%2f/x",
    "http://../x",
    "http://h.example:99999/../x",
    "file:///etc/passwd",
    "http://h.example/C:/Windows/System32/drivers/etc/hosts",
    "http://h.example/\\\\server\\share\\x",
    "http://h.example/%5C%5Cserver%5Cshare",
    "http:///../../x",
]


@pytest.mark.parametrize("url", HOSTILE)
def test_hostile_urls_stay_inside_base_dir(layout, base, url):
    rel = layout.path_for(url)
    assert not rel.is_absolute()
    assert not any(part in ("", ".", "..") for part in rel.parts)
    target = (base / rel).resolve()
    assert target.is_relative_to(base.resolve()) and target != base.resolve()
    assert layout.write_if_changed(rel, f"content of {url}\n")
    assert target.read_text() == f"content of {url}\n"


def test_hostile_urls_write_nothing_outside(tmp_path, layout, base):
    for url in HOSTILE:
        layout.write_if_changed(layout.path_for(url), url)
    outside = [p for p in tmp_path.rglob("*") if p.is_file()
               and not p.resolve().is_relative_to(base.resolve())]
    assert outside == []
    assert len({layout.path_for(u) for u in HOSTILE}) >= len(HOSTILE) - 12  # mostly distinct


def test_symlink_out_of_base_dir_is_refused(tmp_path, base):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (base / "h.example").symlink_to(elsewhere, target_is_directory=True)
    lay = OutputLayout(base)
    with pytest.raises(CrawlError, match="outside"):
        lay.path_for("http://h.example/x")
    with pytest.raises(CrawlError, match="outside"):
        lay.write_if_changed(Path("../escape.md"), "x")
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "out" / "escape.md").exists()


def test_resolved_answers_as_resolve_does(tmp_path):
    """The lstat walk gives what Path.resolve gives: links in the middle, at the end,
    dangling, looping, through a file, missing folders, relative paths and ``..``."""
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "f").write_text("x")
    (tmp_path / "out").mkdir()
    (tmp_path / "d" / "up").symlink_to(tmp_path / "out", target_is_directory=True)
    (tmp_path / "d" / "end.md").symlink_to(tmp_path / "f")
    (tmp_path / "d" / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "d" / "loop").symlink_to(tmp_path / "d" / "loop")
    paths = [tmp_path / "d" / "e" / "x.md", tmp_path / "d" / "up" / "x.md",
             tmp_path / "d" / "end.md", tmp_path / "d" / "dangling" / "x.md",
             tmp_path / "f" / "x.md", tmp_path / "missing" / "a" / "b.md",
             tmp_path / "d" / ".." / "f", Path("relative") / "x.md", Path("/")]
    for path in paths:
        assert resolved(path) == path.resolve(), path
    with pytest.raises(RuntimeError):
        (tmp_path / "d" / "loop" / "x").resolve()
    with pytest.raises(RuntimeError):
        resolved(tmp_path / "d" / "loop" / "x")


def test_a_folder_swapped_for_a_symlink_is_refused_at_the_write(tmp_path, base):
    """The check before the write looks again: a folder that became a symlink to
    somewhere else after its name was worked out gets nothing written through it."""
    lay = OutputLayout(base)
    rel = lay.path_for("http://h.example/guide/a")
    assert lay.write_if_changed(rel, "one\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (base / "h.example" / "guide" / "a.md").unlink()
    (base / "h.example" / "guide").rmdir()
    (base / "h.example" / "guide").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(CrawlError, match="outside"):
        lay.write_if_changed(rel, "two\n")
    assert list(elsewhere.iterdir()) == []


def test_a_missing_folder_is_made_for_the_first_page_in_it(tmp_path):
    """The folder of a new page is made when the write finds it missing; a file where
    the folder should be fails as before."""
    staging = tmp_path / "staging"
    staging.mkdir()
    target = tmp_path / "out" / "a" / "b" / "c.md"
    assert write_if_changed(target, "x", tmp_dir=staging)
    assert target.read_text() == "x" and list(staging.iterdir()) == []
    (tmp_path / "out" / "file").write_text("mine")
    with pytest.raises(NotADirectoryError):
        write_if_changed(tmp_path / "out" / "file" / "d.md", "x", tmp_dir=staging)
    assert (tmp_path / "out" / "file").read_text() == "mine" and list(staging.iterdir()) == []


# --- Windows / SMB safe names ----------------------------------------------------------------


@pytest.mark.parametrize("segment,expected", [
    ("CON", "_CON.md"),
    ("con", "_con.md"),
    ("con.txt", "_con.txt.md"),
    ("Aux.html", "_Aux.md"),
    ("NUL.tar.gz", "_NUL.tar.gz.md"),
    ("PRN", "_PRN.md"),
    ("COM1", "_COM1.md"),
    ("com9.log", "_com9.log.md"),
    ("LPT1", "_LPT1.md"),
    ("lpt9", "_lpt9.md"),
    ("CON%20", "_CON.md"),
    ("conin$", "_conin$.md"),
    ("CONSOLE", "CONSOLE.md"),
    ("COM10", "COM10.md"),
    ("company", "company.md"),
    ("a%3Cb%3Ec%3Ad%22e%7Cf%3Fg%2Ah", "a_b_c_d_e_f_g_h.md"),
    ("tab%09and%0Anewline%7F", "tab_and_newline_.md"),
    ("name.", "name.md"),
    ("name%20%20", "name.md"),
    ("dots...", "dots.md"),
])
def test_windows_safe_names(layout, segment, expected):
    assert layout.path_for(f"https://h.example/{segment}").name == expected


def test_reserved_names_as_directories(layout):
    assert layout.path_for("https://h.example/nul/aux/x").parts[1:] == ("_nul", "_aux", "x.md")


def test_safe_component_never_yields_dot_names():
    for name in ("", ".", "..", "...", " ", ". .", "\x00", ":"):
        assert safe_component(name) not in ("", ".", "..")


def test_long_components_fit_in_255_bytes(base):
    lay = OutputLayout(base, max_path_bytes=100_000)
    names = ["é" * 200, "日本語" * 100, "🚀" * 100, "a" * 300, "a" * 252, "x" * 255]
    seen = set()
    for name in names:
        for url in (f"https://h.example/{name}", f"https://h.example/{name}/{name}",
                    f"https://h.example/{name}?q=1"):
            rel = lay.path_for(url)
            for part in rel.parts:
                assert len(part.encode("utf-8")) <= 255, part
            # room for atomic_write's temporary name beside it
            assert len(rel.name.encode("utf-8")) <= MAX_FILE_NAME_BYTES
            assert rel.suffix == ".md"
            assert rel == lay.path_for(url)
            seen.add(rel)
            assert lay.write_if_changed(rel, url)  # the file system accepts the name
    assert len(seen) == 3 * len(names)
    a = lay.path_for("https://h.example/" + "é" * 200 + "1")
    b = lay.path_for("https://h.example/" + "é" * 200 + "2")
    assert a != b and a.name.startswith("é" * 50)
    short = lay.path_for("https://h.example/" + "a" * 200)
    assert short.name == "a" * 200 + ".md"
    assert lay.path_for("https://h.example/" + "b" * 250 + "/x").parts[1] == "b" * 250


def test_very_long_paths_are_hashed(layout):
    url = "https://h.example/" + "/".join(f"level-{i:02d}-of-a-deep-tree" for i in range(30))
    rel = layout.path_for(url)
    assert len(rel.as_posix().encode()) <= 240
    assert rel.parts[:2] == ("h.example", "_long")
    assert rel.name.startswith("level-29-of-a-deep-tree~") and rel.suffix == ".md"
    other = layout.path_for(url + "x")
    assert other != rel and layout.path_for(url) == rel


# --- collisions ------------------------------------------------------------------------------


def test_collisions_get_a_url_hash_suffix(layout):
    owners: dict[str, str] = {}

    def claims(key: str, owner) -> str:  # NameClaims.claim's contract, in memory
        return owners.setdefault(key, owner())

    def claim(url: str) -> Path:
        return layout.claim_path(url, claims)

    dir_url, file_url = "https://h.example/a/", "https://h.example/a/index.html"
    assert layout.path_for(dir_url) == layout.path_for(file_url)
    first = claim(dir_url)
    second = claim(file_url)
    assert first.as_posix() == "h.example/a/index.md"
    assert second.as_posix() == f"h.example/a/index__u-{short_hash(file_url)}.md"
    assert claim(dir_url) == first and claim(file_url) == second  # stable on re-crawl

    upper, lower = "https://h.example/Guide", "https://h.example/guide"
    assert layout.path_for(upper) != layout.path_for(lower)
    assert claim(upper).name == "Guide.md"
    assert claim(lower).name == f"guide__u-{short_hash(lower)}.md"  # one file on SMB

    page, below = "https://h.example/x", "https://h.example/x.md/y"
    assert claim(page).as_posix() == "h.example/x.md"
    assert claim(below).as_posix() == "h.example/x.md__d/y.md"  # x.md is a file's name
    for url in (dir_url, file_url, upper, lower, page, below):
        assert layout.owned_path(url, claim(url).as_posix()) == claim(url)
    assert layout.owned_path(page, claim(below).as_posix()) is None


def test_collision_suffix_respects_255_bytes(base):
    lay = OutputLayout(base, max_path_bytes=100_000)
    path = lay.path_for("https://h.example/" + "é" * 200)
    taken = OutputLayout.collision_key(path)
    other = lay.claim_path("https://h.example/other", lambda key, owner: "https://someone/else"
                           if key == taken else owner(), path)
    assert other != path and len(other.name.encode()) <= MAX_FILE_NAME_BYTES
    assert other.suffix == ".md" and other.name.startswith("é" * 50)
    assert lay.write_if_changed(other, "x")


# --- write_if_changed ------------------------------------------------------------------------


def test_write_if_changed_keeps_mtime_of_unchanged_files(layout, base):
    rel = layout.path_for("https://h.example/deep/dir/page")
    assert layout.write_if_changed(rel, "# Hello\n")
    target = base / rel
    assert target.read_text() == "# Hello\n"
    old = 1_000_000_000
    os.utime(target, (old, old))
    assert layout.write_if_changed(rel, "# Hello\n") is False
    assert target.stat().st_mtime == old
    assert layout.write_if_changed(rel, "# Hellp\n") is True  # same size, other bytes
    assert target.read_text() == "# Hellp\n" and target.stat().st_mtime != old
    assert layout.write_if_changed(base / rel, b"# Longer now\n") is True  # absolute path
    assert target.read_bytes() == b"# Longer now\n"
    assert [p.name for p in target.parent.iterdir()] == ["page.md"]  # no temp files left


def test_module_level_write_if_changed(tmp_path):
    target = tmp_path / "new" / "dir" / "f.md"
    assert write_if_changed(target, "é\n") is True
    assert target.read_bytes() == "é\n".encode()
    os.utime(target, (5, 5))
    assert write_if_changed(target, "é\n".encode()) is False and target.stat().st_mtime == 5
