"""A site with no sitemap, for link following: pages that link to each other, served by the
real LocalServer (which records every request, so tests can count fetches per page)."""

from __future__ import annotations

from httpserver import LocalServer, Response

TEXT = ("This page explains one part of the product in enough words to be a real page. " * 4)


def page(title: str, links: list[str], *, head: str = "", nav: list[str] | None = None) -> str:
    nav_html = "".join(f'<li><a href="{h}">{h}</a></li>' for h in (nav or []))
    body = "".join(f'<p><a href="{h}">{h}</a></p>' for h in links)
    return (f"<!doctype html><html><head><title>{title}</title>{head}</head><body>"
            f"<nav><ul>{nav_html}</ul></nav><main><h1>{title}</h1><p>{TEXT}</p>{body}</main>"
            "</body></html>")


def tree_site(srv: LocalServer, sections: int = 4, per_section: int = 8,
              delay: float = 0.0) -> list[str]:
    """/ -> /docs/s{i}/ -> /docs/s{i}/p{j}.html; every page carries the section nav.
    Returns every page's path (depth <= 2)."""
    nav = ["/"] + [f"/docs/s{i}/" for i in range(sections)]
    paths = ["/"]
    srv.route("/", Response(body=page("Home", nav[1:], nav=nav), delay=delay))
    for i in range(sections):
        kids = [f"/docs/s{i}/p{j}.html" for j in range(per_section)]
        srv.route(f"/docs/s{i}/", Response(body=page(f"Section {i}", kids, nav=nav),
                                           delay=delay))
        paths.append(f"/docs/s{i}/")
        for j, k in enumerate(kids):
            # siblings link to each other too: many links, few new ones
            srv.route(k, Response(body=page(f"Page {i}.{j}", kids, nav=nav), delay=delay,
                                  etag=True))
            paths.append(k)
    srv.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n",
                                      content_type="text/plain"))
    return paths
