"""More real shapes of discovery files, through the real ``prepare`` CLI (issue 21, 12-16).

Each file here has the shape of one met in the wild that the earlier fixtures lacked: a
text sitemap with ``Https://``, an Atom feed of relative links, llms-full.txt files whose
pages carry YAML front matter or that are just an llms.txt list, an llms.txt pointing at
further llms files, ``- Name: URL`` items, and a sitemap whose every entry is invalid.
"""

from __future__ import annotations

import pytest
from httpserver import LocalServer, Response
from test_discovery_realworld import prepare, text


def _pages(server: LocalServer, *names: str) -> list[str]:
    return [server.url(f"/docs/{n}") for n in names]


def test_text_sitemap_scheme_is_case_insensitive(server, tmp_path):
    p = server.port
    server.route("/urls.txt", text(f"Https://127.0.0.1:{p}/docs/a\nHTTP://127.0.0.1:{p}/docs/b\n"
                                   f"http://127.0.0.1:{p}/docs/c\n"))
    code, out, urls = prepare(tmp_path, server.url("/urls.txt"))
    assert code == 0, out
    assert urls == [f"https://127.0.0.1:{p}/docs/a", f"http://127.0.0.1:{p}/docs/b",
                    f"http://127.0.0.1:{p}/docs/c"], out


def test_atom_relative_links_resolve_against_xml_base_else_the_feed(server, tmp_path):
    feed = ('<?xml version="1.0" encoding="utf-8"?>\n'
            '<feed xmlns="http://www.w3.org/2005/Atom"><title>News</title>'
            '<entry><title>One</title><link href="/docs/one"/>'
            '<updated>2026-01-02T00:00:00Z</updated></entry>'
            '<entry xml:base="/docs/sub/"><title>Two</title><link href="two"/></entry>'
            '<entry><title>Three</title><link rel="alternate" href="three.html"/></entry>'
            '</feed>')
    server.route("/blog/feed.atom", Response(body=feed, content_type="application/atom+xml"))
    code, out, urls = prepare(tmp_path, server.url("/blog/feed.atom"))
    assert code == 0, out
    assert urls == [server.url("/docs/one"), server.url("/docs/sub/two"),
                    server.url("/blog/three.html")], out


def test_llms_full_with_yaml_front_matter_per_page(server, tmp_path):
    a, b = _pages(server, "a", "b")
    body = (f'---\ntitle: "Page A"\nsource: "{a}"\n---\n\n# Page A\n\nText with a '
            "[link](https://elsewhere.invalid/x).\n\n"
            f"---\ntitle: 'Page B'\nsource: '{b}'\ndescription: about b\n---\n\n# Page B\n"
            "\nMore text.\n")
    server.route("/llms-full.txt", text(body))
    code, out, urls = prepare(tmp_path, server.url("/llms-full.txt"))
    assert code == 0, out
    assert urls == [a, b], out


def test_llms_full_that_is_a_list_of_links_is_read_as_llms_txt(server, tmp_path):
    a, b = _pages(server, "a", "b")
    body = f"# Docs\n\n> All of it.\n\n## Pages\n\n- [A]({a}): first\n- [B](/docs/b)\n"
    server.route("/llms-full.txt", text(body))
    code, out, urls = prepare(tmp_path, server.url("/llms-full.txt"))
    assert code == 0, out
    assert urls == [a, b], out


@pytest.mark.parametrize("source", ["/llms.txt", "/"])  # named, or found on a bare site
def test_llms_txt_linking_more_llms_files_follows_them(server, tmp_path, source):
    a, b, c = _pages(server, "a", "b", "c")
    server.route("/llms.txt", text("# Site\n\n## Languages\n\n"
                                   "- [English](/llms-en.txt)\n"
                                   f"- [Everything]({server.url('/llms-full.txt')})\n"))
    server.route("/llms-en.txt", text(f"# English\n\n## Docs\n\n- [A]({a})\n- [B]({b})\n"))
    server.route("/llms-full.txt", text(f"# C\nSource: {c}\n\nThe text of C.\n"))
    code, out, urls = prepare(tmp_path, server.url(source))
    assert code == 0, out
    assert urls == [a, b, c], out
    assert "in 3 files" in out, out


def test_llms_txt_name_colon_url_items(server, tmp_path):
    a, b = _pages(server, "a", "b")
    server.route("/llms.txt", text(f"# Site\n\n## Docs\n\n- Getting started: {a}\n"
                                   f"- Reference: <{b}> - every option\n"))
    code, out, urls = prepare(tmp_path, server.url("/llms.txt"))
    assert code == 0, out
    assert urls == [a, b], out


def test_nothing_usable_is_said_plainly_and_fails(server, tmp_path):
    server.route("/sitemap.xml", Response(
        body='<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             "<url><loc>/relative</loc></url><url><loc>not a url</loc></url>"
             "<url><loc>ftp://127.0.0.1/x</loc></url></urlset>",
        content_type="application/xml"))
    code, out, urls = prepare(tmp_path, server.url("/sitemap.xml"), check=False)
    assert code == 1 and urls == [], out
    assert "Traceback" not in out
    assert "no usable URLs: all 3 entries are invalid" in out, out
