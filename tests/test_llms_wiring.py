"""llms.txt features carried from discovery to the files: ``.md`` twins fetched first, and
``## Optional`` links marked in the index and the front matter."""

from __future__ import annotations

import yaml
from httpserver import Response
from sites import cli, page_html, read_index, write_config

LLMS = """# Docs

> The docs.

## Guides

- [Intro](/docs/intro.html): start here
- [Setup](/docs/setup.html): install

## Optional

- [History](/docs/history.html): how it began
"""


def front(path) -> dict:
    text = path.read_text()
    return yaml.safe_load(text[4:text.index("\n---", 4)])


def test_md_twins_are_fetched_first_and_optional_links_are_marked(server, tmp_path):
    server.route("/llms.txt", Response(body=LLMS, content_type="text/plain"))
    for name in ("intro", "setup", "history"):
        server.route(f"/docs/{name}.html", Response(body=page_html(len(name))))
    twin = "# Intro\n\nThe intro, as the site's own markdown.\n\n```sh\nrun --fast\n```\n"
    server.route("/docs/intro.html.md", Response(body=twin, content_type="text/markdown",
                                                 etag=True))
    cfg = write_config(tmp_path, server.url("/llms.txt"), markdown_twins=True)
    cli(cfg, "crawl", "docs", "--workers", "1")
    out = tmp_path / "out"
    idx = read_index(out / ".crawl-state" / "docs")
    intro = idx[server.url("/docs/intro.html")]
    assert intro["final_url"] == server.url("/docs/intro.html.md")
    md = out / "md" / intro["file_path"]
    assert md.read_text().endswith(twin)  # the twin as it is, not a conversion of the page
    assert front(md)["url"] == server.url("/docs/intro.html")
    assert not server.hits("/docs/intro.html")  # the twin answered: the HTML was not needed
    assert server.hits("/docs/setup.html")  # no twin (404): the page as usual
    hist = idx[server.url("/docs/history.html")]
    assert hist["optional"] is True and "optional" not in idx[server.url("/docs/setup.html")]
    assert front(out / "md" / hist["file_path"])["optional"] is True
    # A re-crawl asks for the twin conditionally.
    cli(cfg, "crawl", "docs", "--workers", "1")
    again = server.hits("/docs/intro.html.md")
    assert len(again) == 2 and "if-none-match" in again[1].headers
    assert not server.hits("/docs/intro.html")


def test_skip_optional_leaves_the_optional_section_out(server, tmp_path):
    server.route("/llms.txt", Response(body=LLMS, content_type="text/plain"))
    for name in ("intro", "setup", "history"):
        server.route(f"/docs/{name}.html", Response(body=page_html(len(name))))
    cfg = write_config(tmp_path, server.url("/llms.txt"), skip_optional=True)
    cli(cfg, "crawl", "docs", "--workers", "1")
    assert server.hits("/docs/intro.html") and not server.hits("/docs/history.html")
