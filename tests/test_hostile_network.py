"""Issue 20, items 10-13: requests to places a site never pointed at, and requests that never
end.  Each case runs the real CLI against hostile servers on loopback addresses: a site on
127.0.0.2 stands for a public site (the address policy exempts a site's own addresses only,
fetch/netguard.py), and 127.0.0.1 or 127.0.0.3 for the internal service it points at."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from httpserver import LocalServer, Response
from sites import cli, doc_site, page_html, signalled, write_config

from sitemap_crawler.config import Settings
from sitemap_crawler.fetch.netguard import AddressPolicy

DRIP = {"chunks": 60, "drip": 0.5}  # 30 s for the whole body: a byte every now and then


def _redirect(to: str) -> Response:
    return Response(302, b"", headers={"Location": to}, content_type=None)


def _urlset(urls: list[str]) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
            'schemas/sitemap/0.9">' + "".join(f"<url><loc>{u}</loc></url>" for u in urls)
            + "</urlset>")


def _rows(cfg: Path, tmp_path: Path) -> dict[str, tuple[str, str]]:
    """url -> (outcome, reason), as `export` tells a user."""
    dest = tmp_path / "urls.jsonl"
    cli(cfg, "export", "docs", "--format", "jsonl", "-o", str(dest))
    rows = [json.loads(line) for line in dest.read_text().splitlines()]
    return {r["url"]: (r["outcome"], r["reason"] or "") for r in rows}


# -- 12: the address policy ----------------------------------------------------------------

def test_the_policy_refuses_internal_addresses_unless_they_are_the_sites_own():
    public = AddressPolicy.for_site(Settings(), ["http://93.184.216.34/"])
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.0.1", "169.254.169.254",
                    "fd00:ec2::254", "::1", "::ffff:127.0.0.1", "0.0.0.0", "100.64.0.1",
                    "fe80::1%1", "224.0.0.1"):
        assert public.refusal(address) is not None, address
    for metadata in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"):
        assert public.refusal(metadata) == "cloud metadata"
    assert public.refusal("93.184.216.34") is None and public.refusal("2606:4700::1") is None
    own = AddressPolicy.for_site(Settings(), ["http://127.0.0.2:8080/sitemap.xml"])
    assert own.refusal("127.0.0.2") is None  # the site's own address, any port
    assert own.refusal("127.0.0.1") == "loopback"  # not its network
    allowed = AddressPolicy.for_site(Settings(allow_networks=("10.0.0.0/8",)), [])
    assert allowed.refusal("10.9.9.9") is None and allowed.refusal("192.168.1.1") == "private"


@pytest.mark.parametrize("key, value, says", [
    ("allow_networks", ["10.0.0.0/8", "intranet"], "expected IP networks"),
    ("request_deadline", 0, "greater than 0"),
])
def test_bad_network_settings_are_one_line_and_exit_2(tmp_path, key, value, says):
    cfg = write_config(tmp_path, "http://127.0.0.1:9/", **{key: value})
    r = cli(cfg, "list", check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and says in lines[0], r.stderr


@pytest.mark.parametrize("allow", [False, True], ids=["refused", "allow_networks"])
def test_a_link_to_a_loopback_name_is_refused_by_the_address_it_resolves_to(tmp_path, allow):
    """``localhost`` passes every name check (allow_other_hosts); its address does not."""
    with LocalServer("127.0.0.2") as site, LocalServer("127.0.0.1") as inner:
        inner.route("/secret.html", Response(body=page_html(7)))
        secret = f"http://localhost:{inner.port}/secret.html"
        site.route("/llms.txt", Response(body=f"# Docs\n\n- [Secret]({secret})\n",
                                         content_type="text/plain"))
        extra = {"allow_networks": ["127.0.0.1/32", "::1/128"]} if allow else {}
        cfg = write_config(tmp_path, site.url("/llms.txt"), allow_other_hosts=True, **extra)
        r = cli(cfg, "crawl", "docs", "--workers", "1", check=False)
        rows = _rows(cfg, tmp_path)
    if allow:
        assert r.returncode == 0, r.stderr
        assert rows[secret][0] == "written" and inner.hits("/secret.html")
        return
    assert inner.requests == [], [q.path for q in inner.requests]  # not even robots.txt
    assert rows[secret] == ("failed", "blocked_address")
    assert "blocked_address: localhost is" in r.stderr, r.stderr[-2000:]


def test_a_sitemap_line_pointing_inside_is_not_fetched(tmp_path):
    with LocalServer("127.0.0.2") as site, LocalServer("127.0.0.1") as inner:
        doc_site(site, 2)
        inner.route("/sitemap.xml", Response(body=_urlset([site.url("/docs/page-0.html")]),
                                             content_type="application/xml"))
        site.route("/robots.txt", Response(
            body=f"User-agent: *\nAllow: /\nSitemap: {site.url('/sitemap.xml')}\n"
                 f"Sitemap: {inner.url('/sitemap.xml')}\n", content_type="text/plain"))
        cfg = write_config(tmp_path, site.url("/"))
        r = cli(cfg, "prepare", "docs", check=False)
    assert inner.requests == []
    assert "blocked_address" in r.stdout + r.stderr, r.stdout + r.stderr


# -- 11: page redirects compare scheme, host and port --------------------------------------

def test_a_page_redirect_to_another_port_of_its_host_is_refused(server, tmp_path):
    with LocalServer("127.0.0.1") as inner:
        inner.route("/secret.html", Response(body=page_html(7)))
        urls = doc_site(server, 1)
        server.route("/jump.html", _redirect(inner.url("/secret.html")))
        server.route("/http-on-443.html", _redirect("http://127.0.0.1:443/x"))
        jump, odd = server.url("/jump.html"), server.url("/http-on-443.html")
        server.route("/sitemap.xml", Response(body=_urlset([*urls, jump, odd]),
                                              content_type="application/xml"))
        cfg = write_config(tmp_path, server.url("/sitemap.xml"))
        cli(cfg, "crawl", "docs", "--workers", "1", check=False)
        rows = _rows(cfg, tmp_path)
        assert inner.requests == []
    assert rows[jump] == ("skipped", "redirect_offsite")
    assert rows[odd] == ("skipped", "redirect_offsite")
    assert rows[urls[0]][0] == "written"


# -- 10: discovery adopts a host only from an answer that is what was asked for ------------

def test_a_probe_redirected_to_another_host_adopts_it_only_for_a_sitemap(tmp_path):
    with LocalServer("127.0.0.2") as site, LocalServer("127.0.0.3") as other:
        other.route("/", Response(body=page_html(1)))  # an HTML page: not a sitemap
        other.route("/sm.xml", Response(body=_urlset([other.url("/leak.html")]),
                                        content_type="application/xml"))
        other.route("/leak.html", Response(body=page_html(2)))
        site.route("/sitemap.xml", _redirect(other.url("/")))
        site.route("/sitemap_index.xml", Response(
            body='<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap>'
                 f'<loc>{other.url("/sm.xml")}</loc></sitemap></sitemapindex>',
            content_type="application/xml"))
        # the address policy lets both through: only the host rule is tested here
        cfg = write_config(tmp_path, site.url("/"), allow_networks=["127.0.0.0/8"])
        r = cli(cfg, "prepare", "docs", check=False)
        assert other.hits("/sm.xml") == [], r.stdout + r.stderr
        assert "child sitemap on another host skipped" in r.stdout + r.stderr
        # a real move is still followed: the answer is a sitemap
        site.route("/sitemap.xml", _redirect(other.url("/sm.xml")))
        cfg = write_config(tmp_path, site.url("/"), allow_networks=["127.0.0.0/8"],
                           name="moved")
        cli(cfg, "prepare", "moved")
        assert len(other.hits("/sm.xml")) == 1
    pending = tmp_path / "out" / ".crawl-state" / "moved" / "tickets" / "pending"
    assert other.url("/leak.html") in "".join(p.read_text() for p in pending.iterdir())


# -- 13: a deadline per request, and stops that reach a download ---------------------------

def test_a_dripping_page_is_cut_at_the_deadline(server, tmp_path):
    urls = doc_site(server, 2)
    server.route("/docs/page-1.html", Response(body=page_html(1), **DRIP))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), request_deadline=1.5)
    t0 = time.monotonic()
    cli(cfg, "crawl", "docs", "--workers", "1", check=False, timeout=60)
    took = time.monotonic() - t0
    rows = _rows(cfg, tmp_path)
    assert rows[urls[1]][1] == "deadline", rows[urls[1]]
    assert rows[urls[0]][0] == "written"
    assert took < 20, took  # the drip alone takes 30 s (bounds leave room for a busy machine)


def test_a_dripping_sitemap_fails_prepare_at_the_deadline(server, tmp_path):
    doc_site(server, 2)
    sm = server.routes["/sitemap.xml"]
    assert isinstance(sm, Response)
    server.route("/sitemap.xml", Response(body=sm.body, content_type="application/xml", **DRIP))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), request_deadline=1.5)
    t0 = time.monotonic()
    r = cli(cfg, "prepare", "docs", check=False, timeout=60)
    assert time.monotonic() - t0 < 20
    assert r.returncode != 0 and "deadline" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_a_dripping_robots_txt_does_not_hold_the_host(server, tmp_path):
    urls = doc_site(server, 1)
    server.route("/robots.txt", Response(body="User-agent: *\nAllow: /\n" + "#" * 2000,
                                         content_type="text/plain", **DRIP))
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), request_deadline=1.5,
                       respect_robots_txt=True, max_retries=0)
    t0 = time.monotonic()
    cli(cfg, "prepare", "docs")
    cli(cfg, "work", "--workers", "1", check=False, timeout=60)
    assert time.monotonic() - t0 < 25
    assert _rows(cfg, tmp_path)[urls[0]][1] == "robots_unavailable"


@pytest.mark.parametrize("how", ["sigint", "sigint-silent", "max_duration"])
def test_a_stop_reaches_a_download_in_progress(server, tmp_path, how):
    """A drip, or a server that says nothing for 25 s (within the 30 s read timeout)."""
    urls = doc_site(server, 1)
    server.route("/docs/page-0.html", Response(body=page_html(0), **DRIP)
                 if how != "sigint-silent" else Response(body=page_html(0), delay=25))
    extra = {"max_duration": 2} if how == "max_duration" else {}
    cfg = write_config(tmp_path, server.url("/sitemap.xml"), request_deadline=600, **extra)
    cli(cfg, "prepare", "docs")
    if how == "max_duration":
        t0 = time.monotonic()
        r = cli(cfg, "work", "--workers", "1", check=False, timeout=60)
        took = time.monotonic() - t0
        assert r.returncode == 0 and "max_duration" in r.stdout + r.stderr, r.stderr[-2000:]
        assert took < 2 + 10, took
    else:
        sent: list[float] = []
        code, err = signalled(cfg, "work", "--workers", "1", sig=signal.SIGINT,
                              ready=lambda: server.hits("/docs/page-0.html"),
                              before=lambda: sent.append(time.monotonic()) or time.sleep(1))
        took = time.monotonic() - sent[0] - 1
        assert code == 130, err[-2000:]
        assert took < 10, took  # the drip would take 30 s, the silent server 25 s
    # handed back, to be fetched by the next run
    pending = tmp_path / "out" / ".crawl-state" / "docs" / "tickets" / "pending"
    assert urls[0] in "".join(p.read_text() for p in pending.iterdir())
