"""Issue 19: general pages of sites the converter has never seen (bench/bench_general.py's
set).  Each test is abridged from a real page of that set (class names and nesting as the
site ships them), and each rule is one that the generator corpus and the article set were
checked against."""

from __future__ import annotations

from tests.test_convert_structure import convert

_P = ("<p>When planning corporate events, it is important to think about the venue, the "
      "guests, the budget and the time you have, and to write each of them down early.</p>")


def test_a_header_left_open_around_the_whole_page_is_a_wrapper_not_chrome():
    # a WordPress theme (celebritycorporatekit.com): <section class="header"><header> is never
    # closed, so the page's text, its footer too, sits inside <header> and div.header-search.
    # Before: the density pick found no paragraph outside chrome, and the page came out empty.
    body = f"""<section class="header"><header>
      <div class="header-top"><a href="/a">Venues</a> <a href="/b">Events</a>
        <a href="/c">Contact us</a></div>
      <div class="header-search"><div class="header-search-inner"><input name="s"></div>
      <section class="section-breadcrumb"><a href="/">Home</a> / Blog</section>
      <section class="basic-content"><div class="container-fluid"><div class="row">
        <div class="col-sm-12 col-md-8 offset-md-2">
          <h1>20 Corporate Event Planning Tips</h1>{_P * 3}
          <h2>Pick an Inspiring Venue</h2>{_P * 2}</div></div></div></section>
      <section class="footer"><footer class="container-fluid">
        <p>Celebrity Corporate Kit, 1 Main Street. All rights reserved.</p></footer></section>
    """
    md = convert(body)
    assert md.startswith("# 20 Corporate Event Planning Tips\n")
    assert "## Pick an Inspiring Venue" in md and md.count("When planning corporate") == 5
    assert "Contact us" not in md and "All rights reserved" not in md
