"""robots.txt through a real HTTP server: rules, agent matching, caching, errors (robots.py)."""

from __future__ import annotations

import dataclasses
import socket
import time

import httpx
import pytest
from httpserver import Response

from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.robots import MAX_ROBOTS_BYTES, RobotsCache, origin_of, product_token

ROBOTS = """\
# a comment
User-agent: *
Disallow: /

User-agent: sitemap-crawler
Disallow: /private/
Allow: /private/ok.html
Crawl-delay: 2.5

User-agent: otherbot
Disallow: /other-only/
Request-rate: 1/4s

Sitemap: https://example.org/sitemap.xml
Sitemap: https://example.org/news.xml
"""


def _settings(**kw) -> Settings:
    return dataclasses.replace(Settings(), **kw)


@pytest.fixture
def client():
    with httpx.Client(timeout=5) as c:
        yield c


def test_rules_for_our_product_token(server, client):
    server.route("/robots.txt", Response(body=ROBOTS, content_type="text/plain"))
    rc = RobotsCache(client, _settings(user_agent="sitemap-crawler/0.4.0 (+https://x.test)"))
    assert rc.agent == "sitemap-crawler"
    assert rc.allowed(server.url("/docs/page"))  # our group does not disallow /
    assert not rc.allowed(server.url("/private/secret"))
    assert rc.allowed(server.url("/private/ok.html"))  # the longer Allow wins
    assert rc.crawl_delay(server.url("/")) == 2.5
    assert rc.sitemaps(server.base) == ["https://example.org/sitemap.xml",
                                        "https://example.org/news.xml"]
    assert len(server.hits("/robots.txt")) == 1  # fetched once for all the questions above


def test_agent_matching_falls_back_to_star_and_converts_request_rate(server, client):
    server.route("/robots.txt", Response(body=ROBOTS, content_type="text/plain"))
    unknown = RobotsCache(client, _settings(user_agent="SomeBot/1.0"))
    assert not unknown.allowed(server.url("/docs/page"))  # '*' disallows everything
    assert unknown.crawl_delay(server.url("/")) is None
    other = RobotsCache(client, _settings(user_agent="OtherBot/2.0 (compatible)"))  # any case
    assert other.allowed(server.url("/docs/page"))
    assert not other.allowed(server.url("/other-only/x"))
    assert other.crawl_delay(server.url("/")) == 4.0  # Request-rate: 1/4s
    assert product_token("OtherBot/2.0 (compatible)") == "OtherBot"


def test_the_user_agent_header_is_ours(server, client):
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow:\n"))
    with httpx.Client(headers={"User-Agent": "sitemap-crawler/9"}) as c:
        RobotsCache(c, _settings()).allowed(server.url("/x"))
    assert server.hits("/robots.txt")[0].headers["user-agent"] == "sitemap-crawler/9"


def test_missing_robots_allows_all(server, client):
    rc = RobotsCache(client, _settings())  # no route: the server answers 404
    assert rc.verdict(server.url("/anything")) == "allowed"
    assert rc.crawl_delay(server.url("/anything")) is None
    assert rc.sitemaps(server.base) == []
    server.route("/robots.txt", Response(403, body="no"))
    assert RobotsCache(client, _settings()).allowed(server.url("/x"))  # 4xx: allow all


def test_server_error_means_dont_crawl_yet_and_is_retried(server, client):
    server.route("/robots.txt", Response(503, body="busy"))
    rc = RobotsCache(client, _settings(), error_ttl=0.3)
    assert rc.verdict(server.url("/x")) == "unavailable"
    assert not rc.allowed(server.url("/x"))
    assert rc.entry(origin_of(server.base)).status == 503
    assert len(server.hits("/robots.txt")) == 1  # the error is cached for a short while
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow: /x\n"))
    assert rc.verdict(server.url("/y")) == "unavailable"
    time.sleep(0.35)
    assert rc.verdict(server.url("/y")) == "allowed"
    assert rc.verdict(server.url("/x")) == "disallowed"
    assert len(server.hits("/robots.txt")) == 2


def test_retry_errors_refetches_at_once(server, client):
    server.route("/robots.txt", Response(500))
    rc = RobotsCache(client, _settings(), error_ttl=600)
    assert rc.verdict(server.url("/x")) == "unavailable"
    server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n"))
    assert rc.verdict(server.url("/x")) == "unavailable"  # cached
    assert rc.verdict(server.url("/x"), retry_errors=True) == "allowed"


def test_429_is_unavailable_not_missing(server, client):
    server.route("/robots.txt", Response(429))
    assert RobotsCache(client, _settings()).verdict(server.url("/x")) == "unavailable"


def test_network_error_is_unavailable(client):
    with socket.socket() as s:  # a port on which nobody listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = RobotsCache(client, _settings())
    assert rc.verdict(f"http://127.0.0.1:{port}/x") == "unavailable"
    assert rc.entry(f"http://127.0.0.1:{port}").error


def test_cache_expires(server, client):
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow: /a\n"))
    rc = RobotsCache(client, _settings(robots_cache=0.3))
    assert not rc.allowed(server.url("/a"))
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow: /b\n"))
    assert not rc.allowed(server.url("/a"))  # still cached
    time.sleep(0.35)
    assert rc.allowed(server.url("/a"))
    assert not rc.allowed(server.url("/b"))
    assert len(server.hits("/robots.txt")) == 2


def test_redirects_followed_up_to_five(server, client):
    server.route("/robots.txt", Response(301, headers={"Location": "/r1"}))
    server.route("/r1", Response(302, headers={"Location": server.url("/real-robots")}))
    server.route("/real-robots", Response(body="User-agent: *\nDisallow: /secret\n"))
    rc = RobotsCache(client, _settings())
    assert not rc.allowed(server.url("/secret/x"))
    assert rc.allowed(server.url("/open"))
    # an endless chain is treated as "no robots.txt" after 5 hops
    server.route("/robots.txt", Response(301, headers={"Location": "/loop"}))
    server.route("/loop", Response(301, headers={"Location": "/loop"}))
    before = len(server.requests)
    rc2 = RobotsCache(client, _settings())
    assert rc2.allowed(server.url("/secret/x"))
    assert len(server.requests) - before == 6  # robots.txt + 5 redirect hops


def test_body_capped_at_512_kib(server, client):
    filler = ("# " + "x" * 98 + "\n") * (MAX_ROBOTS_BYTES // 100 + 10)
    body = "User-agent: *\nDisallow: /early\n" + filler + "Disallow: /late\n"
    assert len(body) > MAX_ROBOTS_BYTES
    server.route("/robots.txt", Response(body=body, content_type="text/plain", chunks=20))
    rc = RobotsCache(client, _settings())
    assert not rc.allowed(server.url("/early"))
    assert rc.allowed(server.url("/late"))  # beyond the cap: ignored


def test_origins_are_separate(server, client):
    server.route("/robots.txt", Response(body="User-agent: *\nDisallow: /\n"))
    rc = RobotsCache(client, _settings())
    assert not rc.allowed(server.url("/x"))
    assert origin_of(server.url("/x")) == server.base
    assert origin_of("HTTP://Example.ORG:80/a?b") == "http://example.org"
    assert origin_of("https://example.org:8443/") == "https://example.org:8443"
    # 'localhost' is another origin than 127.0.0.1 (same server): fetched separately
    assert not rc.allowed(f"http://localhost:{server.port}/x")
    assert len(server.hits("/robots.txt")) == 2
