"""Tickets split by host (T9): the split reads each host once per batch, with the same
groups as reading every URL on its own (a million-URL prepare made a urlsplit per URL)."""

from __future__ import annotations

from sitemap_crawler.protocol.hostgate import host_key
from sitemap_crawler.protocol.tickets import by_host, host_tag

URLS = [
    "https://Docs.Example/a", "https://docs.example:443/b", "https://docs.example:8443/c",
    "http://docs.example:80/d", "http://docs.example/e?x=1", "https://docs.example?q=/x",
    "https://user:pw@docs.example/f", "https://[::1]:8080/g", "https://docs.example#top/h",
    "https://other.example", "http://127.0.0.1:5000/i/j//k", "https://docs.example/l",
]


def test_by_host_groups_as_one_urlsplit_per_url_would():
    entries = [{"url": u} for u in URLS]
    want: dict[str, list[str]] = {}
    for u in URLS:
        want.setdefault(host_tag(host_key(u)), []).append(u)
    got = [(tag, [e["url"] for e in group]) for tag, group in by_host(entries)]
    assert got == list(want.items())
    assert len(got) == 5  # docs.example (any case, port 80/443, userinfo), :8443, [::1]:8080,
    # other.example, 127.0.0.1:5000
    hosts: set[str] = set()
    by_host(entries, hosts)
    assert hosts == {host_key(u) for u in URLS}  # the hosts a prepare records (scope.py)


def test_a_batch_of_one_origin_is_one_group_and_a_lookalike_is_not():
    """The one-origin shortcut: every URL starts with the first one's head and a ``/``."""
    same = [{"url": f"https://docs.example/p/{i}"} for i in range(5)]
    hosts: set[str] = set()
    assert by_host(same, hosts) == [("docs.example", same)] and hosts == {"docs.example"}
    for odd in ("https://docs.example.evil/x", "https://docs.example:8443/x",
                "https://docs.example?x=/y", "https://docs.example"):
        mixed = [*same, {"url": odd}]
        want: dict[str, list[str]] = {}
        for e in mixed:
            want.setdefault(host_tag(host_key(e["url"])), []).append(e["url"])
        got = [(t, [e["url"] for e in g]) for t, g in by_host(mixed)]
        assert got == list(want.items()), odd
