"""Issue 19: general pages of sites the converter has never seen (bench/bench_general.py's
set).  Each test is abridged from a real page of that set (class names and nesting as the
site ships them), and each rule is one that the generator corpus and the article set were
checked against."""

from __future__ import annotations

from sitemap_crawler.convert.markdown import html_to_markdown
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


def test_a_page_hidden_until_a_script_shows_it_is_not_empty():
    # a Shopify shop (deathwishcoffee.com) behind a lock app: the product sits in
    # div.easylockdown-content style="display:none", which the app's script shows.  Before:
    # nothing visible was left and the page came out empty (not written at all).
    about = ("<p>Meet the yin to your yang. While you may be familiar with our bold and "
             "intense coffee, this dark roast is rich, smooth and full of flavour.</p>")
    body = f"""<main id="MainContent" class="content-for-layout" role="main">
      <div class="easylockdown-loop-notice"><div class="easylockdown-loop-page-content">
        </div></div>
      <div class="easylockdown-content" style="display:none;">
        <section class="shopify-section"><h1>Dark Roast Coffee</h1>
          <p>Regular price $19.99</p><h4>DARKER ROAST FOR BOLDER DAYS.</h4>{about * 4}
        </section></div></main>
      <footer><p>Death Wish Coffee Co. All rights reserved.</p></footer>"""
    md = convert(body)
    assert md.startswith("# Dark Roast Coffee\n") and md.count("Meet the yin") == 4
    # a hidden block that is not most of the page stays hidden
    shown = convert(f"<main><h1>Dark Roast</h1>{about * 4}"
                    f'<div style="display: none"><p>{"Hidden coupon text. " * 40}</p></div>'
                    "</main>")
    assert "Meet the yin" in shown and "Hidden coupon" not in shown


_EXCERPT = ("Salt Lake City is the gateway to dry powder skiing and to the five parks of the "
            "state, all year. ")


def _card(title: str, words: int) -> str:
    # globaltravelerusa.com's post-item: a picture link, a category, a date, a headline link
    # (empty on one: a script fills it in) and an excerpt
    return (f'<div class="post-wide post-item row"><div class="img-wrapper col-10">'
            f'<a href="/{words}/" class="image"></a></div><div class="copy col-14">'
            f'<div class="tagline"><h5 class="categories"><a href="/december/">December 2025'
            f'</a></h5><span class="date">Dec 19, 2025</span></div><h3 class="title">'
            f'<a href="/{words}/" class="post"><span><span class="text">{title}</span></span>'
            f'</a></h3><p class="content">{_EXCERPT * words}'
            f'</p></div></div>')


def test_teaser_lists_below_a_story_are_not_the_story():
    # a WordPress travel magazine (og:type=article) without <main>/<article>: the story
    # column, then lists of other posts.  One card's headline is an empty link, and two
    # cards' excerpts are long (over 600 characters): before, only short cards with a
    # headline of text counted as teasers, so the lists held a third of the score and the
    # pick climbed to #content, taking "Read This Next", the newsletter and every excerpt.
    story = ("<p>According to the study, Enterprise topped the charts for 2025, with a score "
             "of 734 out of 1,000; National came second, and Sixt tied for third.</p>") * 7
    body = f"""<div id="main-content"><div class="hero-header"><h1>Top Rental Cars</h1></div>
      <div id="content"><div class="container-fluid"><div class="row">
        <div class="col-22" id="body-content">{story}</div>
        <div class="sidebar col-7"><h4>Newsletter</h4>
          <p>Get insider information and deals in your inbox!</p></div></div></div>
      <div class="container-fluid mt-5"><div class="section content">
        <div class="post-list col-24">{_card("", 4)}{_card("Cathay Pacific Suites", 4)}
          {_card("How To Enhance Your Wellness", 7)}</div>
        <div class="post-list col-24">{_card("Ireland: Golf by the Sea", 4)}
          {_card("Three AmaWaterways Cruises", 9)}{_card("Hotel Casa Palmela", 4)}</div>
      </div></div></div></div>"""
    md = convert(body, head='<meta property="og:type" content="article">')
    assert md.count("Enterprise topped the charts") == 7
    assert "Salt Lake City" not in md and "insider information" not in md


def _column(kicker: str, title: str) -> str:
    # the Herald Sun's "Other Opinion Columns": a kicker, then the headline link
    return (f'<div class="story-block sectionref-news"><h4 class="heading">\n'
            f'  <strong class="kicker">{kicker}</strong>\n  <a href="/news/opinion/{kicker}">'
            f'{title}</a>\n</h4><a href="/news/opinion/{kicker}" class="thumb-link"></a>'
            f'<p class="standfirst">THE good thing about it is that it is cheap and of good '
            f'quality, and the bad thing is the whole, exhausting business of getting it, '
            f'from the car park to the check-out, with the kids in tow.</p></div>')


def test_teasers_whose_headline_opens_with_a_kicker_are_teasers():
    # a News Corp column page: the column, then "Other Opinion Columns", each a kicker in
    # <strong> and a linked headline.  Before, the kicker made the headline less than 80 %
    # link, the items were not teasers, and their standfirsts were read as the column's.
    column = ("<p>A HIGH-powered federal government team has been doing the rounds of media "
              "organisations, with talks on the new surveillance laws, in the past week.</p>")
    columns = "".join(_column(k, t) for k, t in (
        ("Editorial", "Fraser's lasting legacy"),
        ("Ikea challenge", "Good for some, but I'm not buying it"),
        ("True liberal", "Ex-PM a man of contrasts"), ("Own backyard", "Local issues first")))
    body = f"""<div id="page"><div id="content"><div id="story">
      <h1>Angry media won't buckle over new surveillance laws</h1>
      <div class="story-body">{column * 14}</div>
      <div class="group text-g-other-opinion-columns"><div class="group-header">
        <h2 class="heading">Other Opinion Columns</h2></div><div class="group-content">
        <div class="item"><div class="module"><div class="module-content">{columns}
      </div></div></div></div></div></div></div></div>"""
    md = convert(body, head='<meta property="og:type" content="article">')
    assert md.count("A HIGH-powered federal") == 14
    assert "exhausting business" not in md and "lasting legacy" not in md


def test_a_slideshow_of_other_stories_inside_a_story_is_left_out():
    # The Independent: itemprop=articleBody holds the story and, between two of its
    # paragraphs, a "Business news in pictures" gallery of 50 slides (an <li> each with its
    # heading and caption), three quarters of the body's text: it was protected as too large
    # to be a widget, and its 50 captions came out as the story.
    story = ("<p>Most people go to hotels for the pleasure of sleeping in a giant bed, with "
             "clean white sheets, and waking up to fresh towels in the morning.</p>")
    slides = "".join(
        f'<li><div class="title"><h2>{i}/50 Star Wars boosts economy</h2></div><p>Production '
        f"of the next Star Wars movie has brought an economic impact of some 150 million "
        f"pounds to Britain, according to company accounts, and more to come.</p></li>"
        for i in range(1, 21))
    body = f"""<div itemprop="articleBody" class="text-wrapper">{story * 4}
      <div class="dnd-widget-wrapper context-full type-gallery"><div class="dnd-atom-rendered">
        <div class="full-gallery"><h2>Business news in pictures</h2><div class="scroller">
          <ul class="legends">{slides}</ul></div></div></div></div>{story * 4}</div>"""
    md = convert(body, head='<meta property="og:type" content="article">')
    assert md.count("Most people go to hotels") == 8 and "Star Wars" not in md
    # a story told as a list of pictures with captions, named like a gallery, stays
    alone = convert(f'<div itemprop="articleBody"><div class="gallery"><ul>{slides}</ul>'
                    "</div></div>", head='<meta property="og:type" content="article">')
    assert alone.count("Star Wars boosts economy") == 20
    # on a page that does not say it is a story (a shop's product carousel), it stays
    shop = convert(f'<div class="product">{story * 8}<div class="carousel"><ul>{slides}</ul>'
                   "</div></div>")
    assert shop.count("Star Wars boosts economy") == 20


def test_text_hidden_by_visibility_hidden_is_left_out():
    # readability's "visibility-hidden" page: paragraphs styled visibility:hidden are not
    # shown, so they are not the page's text (display:none was already left out)
    shown = ("<p>Tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, "
             "quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo.</p>")
    body = f"""<article><h1 style="visibility: hidden;">Lorem</h1>
      <div style="visibility:hidden"><p>Lorem ipsum dolor sit amet, consectetur adipisicing
        elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p></div>
      {shown * 3}</article>"""
    md = convert(body)
    assert md.count("Tempor incididunt") == 3 and "Lorem" not in md
    # a collapsed accordion panel (UC San Diego's course list) is the page's text
    panel = ('<div class="accordion__content" style="overflow: hidden; height: 0px; '
             'visibility: hidden; opacity: 0;" id="c1" aria-labelledby="t1" role="region">'
             "<p>Project Management Fundamentals: four units, online.</p></div>")
    md = convert(f'<main>{shown * 3}<button id="t1">Required courses</button>{panel}</main>')
    assert "Project Management Fundamentals" in md


def test_a_video_players_control_panels_are_not_the_story():
    # Yahoo's video player inside a story's column (og:type=article): buttons
    # (role=button), and settings menus listing qualities, languages and caption fonts,
    # every text a short label.  Before, each label came out as a line of the story.
    fonts = "".join(f'<li class="yvp-ddm-item">{f}</li>' for f in (
        "Arial", "Georgia", "Palatino Linotype", "Times New Roman", "Verdana", "Impact"))
    player = f"""<div class="yvp-main"><div class="yvp-bottom-bar">
      <div class="yvp-menu-controls">{'<div class="yvp-btn" role="button">Play</div>' * 3}
        <div class="yvp-fullscreen-btn button" role="button"><div class="yvp-tooltip">
          Full Screen</div></div><div role="button">Settings</div></div>
      <div class="yvp-settings-container"><ul class="yvp-ddm-list"><li>Auto</li>
        <li>High (HD)</li><li>Medium</li><li>Low</li></ul><div class="yvp-cc-preview">
        Captions will look like this</div><ul class="yvp-ddm-list">{fonts * 4}</ul></div>
    </div></div>"""
    story = ("<p>A photo of a veteran wrapping his newborn in an American flag has sparked a "
             "debate online, with thousands of comments on both sides of the argument.</p>")
    body = f"""<div role="main"><h1>Veteran Wraps Baby in American Flag</h1>{player}
      {story * 6}</div>"""
    md = convert(body, head='<meta property="og:type" content="article">')
    assert md.count("A photo of a veteran") == 6
    assert "Palatino" not in md and "High (HD)" not in md and "Full Screen" not in md


_BED = ("<p>The bed also features vibration detection, so that it can tell when you are "
        "asleep, and it turns the music and the lights down, then off, on its own.</p>")


def test_side_columns_of_links_beside_the_text_column_are_left_out():
    # an old news site with no <main> (digitalartsonline.co.uk, 2008): the text column sits
    # between a column of menus and a sidebar of headline lists titled with <h2>s and an
    # <h1> ("EDIGIT SIGN-UP").  Before: the titles protected the sidebar and it was kept.
    heads = "".join(f'<a href="/news/{i}">Headline number {i} of the site</a><br>'
                    for i in range(6))
    body = f"""<div id="contentArea">
      <div id="leftColumn"><ul class="leftnavbar"><li><a href="/news">News</a></li>
        <li><a href="/blogs">Blogs</a></li><li><a href="/reviews">Reviews</a></li>
        <li><a href="/tutorials">Tutorials</a></li></ul>
        <p><a href="/zinio"><u>Click here</u> for your <strong>FREE</strong> 22 page preview of
          Digital Arts, and a great subscription offer, this month.</a></p>
        <p><b><a href="/forums">Digital Arts Lounge</a></b><br>Just kick back, relax and chat,
          or ask, answer and share in our forums.</p></div>
      <div id="centreColumn">
        <div id="articleHeader"><h1>CES: iSleep to iDream with iPod-ready bed</h1></div>
        <div id="articleContent"><p>Monday 14 Jan 2008 - 09:24</p>
          <div id="intelliTxt">{_BED * 3}</div><p>Jonny Evans</p></div>
        <div id="articleSidebar"><div id="sidenav">
          <a href="/news/"><h2 class="firstHeading">Top news</h2></a><p>{heads}</p>
          <a href="/news/"><h2 class="firstHeading">More news</h2></a><p>{heads}</p>
          <h1>EDIGIT SIGN-UP</h1><p><a href="/signup">Sign up</a> for news by mail, each
            week, with offers.</p>
        </div></div></div></div>"""
    md = convert(body)
    assert md.startswith("# CES: iSleep to iDream") and md.count("vibration detection") == 3
    assert "Jonny Evans" in md
    assert "Headline number" not in md and "Top news" not in md and "EDIGIT" not in md
    assert "Tutorials" not in md and "Lounge" not in md
    # a paragraph of links beside the text is the text's own (a post's list of sources)
    links = "".join(f'<a href="/p/{i}">{i}. Blue floral wallpaper by Sanderson</a><br>'
                    for i in range(1, 6))
    kept = convert(f"<div><div><h1>Love this wallpaper</h1>{_BED * 4}<p>{links}</p></div>"
                   f"<div><p>{_BED}</p></div></div>")
    assert "Blue floral wallpaper" in kept


_TENNIS = ("<p>DESPITE a performance which featured 75 per cent of his first serves, the "
           "sixth seed needed four sets, two tie-breaks and almost three hours to win.</p>")


def test_a_column_of_teasers_beside_the_story_is_left_out():
    # The Australian (2008), no <main>: the story's column sits beside two columns of
    # teasers (linked headline, byline and a summary of another story), whose summaries
    # make them look like text; the title above the columns takes the root up to the page
    # wrapper.  Before: the teasers were kept (F1 0.70).
    def teaser(i: int) -> str:
        return (f'<div class="item"><div class="module"><div class="module-header">'
                f'<h2 class="module-heading"><a href="/s{i}/">Section {i}</a></h2></div>'
                f'<div class="module-content"><h3 class="heading"><a href="/story/{i}">'
                f'Murdoch to buy into Packer empire {i}</a></h3><p><strong class="byline">'
                f"Nick Tabakoff</strong> LACHLAN Murdoch is to make a stunning return to the "
                f"media industry, in a deal to privatise the company.</p></div>"
                f'<div class="module-related"><ul><li><a href="/r{i}">Local stocks fall</a>'
                f'</li><li><a href="/t{i}">Tokyo shares tumble</a></li></ul></div></div></div>')
    body = f"""<div id="page"><div id="nav"><a href="/">Breaking News</a>
      <a href="/nation">The Nation</a> <a href="/world">The World</a></div>
      <div id="section-header"><h1>Roddick swings into the Fourth Round</h1></div>
      <div id="content">
        <div id="primary"><div class="module article" id="article">{_TENNIS * 5}</div></div>
        <div id="secondary"><h2>Latest Top Stories</h2><ul>
          <li><a href="/a">Patriots on brink of history</a></li>
          <li><a href="/b">Justine, Maria to lift intensity</a></li>
          <li><a href="/c">Spanish friends to meet</a></li></ul></div>
        <div id="tertiary"><div class="group quad today"><div class="group-header">
          <h2 class="heading">In The Australian Today</h2></div>
          {"".join(teaser(i) for i in range(5))}</div></div></div></div>"""
    md = convert(body)
    assert md.startswith("# Roddick swings") and md.count("first serves") == 5
    assert "Murdoch" not in md and "Packer" not in md and "Patriots" not in md


_KIWI = ("<p>Kiwi players flayed the Australian team's conduct on the field, and said that the "
         "series had been played in a spirit that did no credit to either side.</p>")


def test_a_table_layouts_navigation_column_with_section_labels_is_left_out():
    # the Deccan Herald (2008): one layout table, the story's cell between two cells of
    # links under plain-text section labels ("News", "Infoline", dates), which bring the
    # links down to 55 % of the column's text.  Before: the column was kept (F1 0.78).
    def nav(label: str, words: list[str]) -> str:
        cells = "".join(f'<tr><td class="LeftNavFont"><a href="/{w}.asp" class="LeftNavFont">'
                        f"{w}</a></td></tr>" for w in words)
        return f'<tr><td class="LeftNavHeader">{label}</td></tr>{cells}'
    column = (nav("News and more, updated daily", ["National", "State", "District", "City"])
              + nav("Infoline and services for readers", ["Panorama", "Net Mail", "Your Take"])
              + nav("Other Headlines, January 11, 2008",
                    ["Everest conqueror Edmund Hillary dies", "Congress and DMK differ"]))
    body = f"""<table><tr><td><table><tr>
      <td class="LeftNavTable"><table>{column}</table></td>
      <td><div id="printReady"><h1>Kiwi players flay Aussies</h1>{_KIWI * 4}</div></td>
      </tr></table></td></tr></table>"""
    md = convert(body)
    assert md.startswith("# Kiwi players") and md.count("Kiwi players flayed") == 4
    assert "Panorama" not in md and "Infoline" not in md and "Edmund Hillary" not in md


_TRAINING = ("<p>Whether you need an accountability partner, new exercises or want to improve "
             "overall strength, the Y has a personal trainer for you, at thirteen locations.</p>")


def test_an_accordion_marked_as_a_tablist_keeps_its_panels():
    # a Drupal YMCA site (Bootstrap paragraphs): the accordion is div role=tablist, each
    # header role=tab holds its own panel (role=tabpanel), and one panel holds a tab set
    # (a tablist around its nav and tab panes).  Before: a tablist was read for its labels
    # only, and three quarters of the page (trainer bios, price tables) were dropped.
    def card(i: int, title: str, inner: str) -> str:
        return (f'<div class="card panel panel-default"><div class="card-header panel-heading" '
                f'role="tab" id="heading-acc-{i}"><h3 class="panel-title"><a href="#c-{i}" '
                f'data-toggle="collapse">{title}</a></h3>'
                f'<div id="c-{i}" class="card-block panel-collapse collapse" role="tabpanel" '
                f'aria-labelledby="heading-acc-{i}"><div class="bp-text">{inner}</div></div>'
                f'</div></div>')
    tabs = ('<div id="tab-1" role="tablist"><ul class="nav nav-tabs">'
            '<li><a href="#tab-1-1" role="tab">Kaylee Meyers</a></li>'
            '<li><a href="#tab-1-2" role="tab">Caleb Cummings</a></li></ul>'
            '<div class="tab-content"><div role="tabpanel" class="tab-pane active" id="tab-1-1">'
            "<p>Kaylee is a certified trainer who specialises in strength and conditioning "
            "for all ages.</p></div><div role=\"tabpanel\" class=\"tab-pane\" id=\"tab-1-2\">"
            "<p>Caleb is a certified personal trainer at the Bob Sierra YMCA.</p></div></div>"
            "</div>")
    body = f"""<main role="main"><h1>Personal and Group Training</h1>{_TRAINING * 2}
      <div class="paragraph--type--bp-accordion" id="accordion-1" role="tablist"
        aria-multiselectable="true">
        {card(1, "Personal Training", _TRAINING.replace("thirteen", "ten") * 2
              + "<p>16 sessions: $825</p>")}
        {card(2, "Meet our trainers", tabs)}</div></main>"""
    md = convert(body)
    assert "Personal Training" in md and "16 sessions: $825" in md
    assert md.count("the Y has a personal trainer") == 4
    assert "Kaylee is a certified trainer" in md and "Caleb is a certified" in md
    assert "Caleb Cummings" in md


def test_a_listing_that_is_only_linked_items_is_not_left_empty():
    # a shop's best-seller page (amazon.com/zgbs): no <main>, a grid of ranked items, each
    # a picture link, a title link, an author link, a format and a price link.  Link lists
    # without prose are menus on such a page; here they were all the page held, and it came
    # out as its title alone (empty: not written).
    books = [("A Court of Thorns and Roses", "Sarah J. Maas", "22.40"),
             ("Theo of Golden: A Novel", "Allen Levi", "18.99"),
             ("The Let Them Theory", "Mel Robbins", "17.50"),
             ("Sunrise on the Reaping", "Suzanne Collins", "19.60"),
             ("Atomic Habits", "James Clear", "14.99"),
             ("Onyx Storm (Deluxe Limited Edition)", "Rebecca Yarros", "24.10"),
             ("The Housemaid", "Freida McFadden", "9.99"), ("Dog Man", "Dav Pilkey", "7.20"),
             ("The Four Agreements", "Don Miguel Ruiz", "8.40")]
    items = "".join(
        f'<li class="zg-no-numbers"><div class="a-cardui grid-cell"><span>#{i + 1}</span>'
        f'<a href="/dp/{i}"><img src="/i/{i}.jpg"></a><a href="/dp/{i}"><div>{title}</div></a>'
        f'<div><a href="/author/{i}">{author}</a></div><div>Hardcover</div>'
        f'<a href="/dp/{i}/offers"><span>${price}</span></a></div></li>'
        for i, (title, author, price) in enumerate(books))
    body = f"""<div id="a-page"><div id="nav"><a href="/">Today's Deals</a>
      <a href="/gift">Gift Cards</a> <a href="/sell">Sell</a></div>
      <div id="zg"><div class="a-column" id="zg-left-col"><ul>
        <li><a href="/b/1">Arts &amp; Photography</a></li><li><a href="/b/2">Biographies</a></li>
        <li><a href="/b/3">Business &amp; Money</a></li></ul></div>
      <div class="a-column" id="zg-right-col"><div class="celwidget"><div id="cards">
        <div class="card-title"><h1>Best Sellers in Books</h1></div>
        <div class="a-cardui"><ol class="p13n-gridRow">{items}</ol></div></div></div></div>
      </div></div>"""
    md = convert(body)
    assert md.startswith("# Best Sellers in Books")
    assert all(t in md and a in md for t, a, _ in books) and "$24.10" in md


_SCARLETT = ("<p>The 4th-gen Scarlett 4i4 offers a significant upgrade over previous "
             "generations, boasting updated mic preamps, Auto Gain and Clip Safe features.</p>")


def test_customer_reviews_under_a_product_are_not_its_description():
    # a shop's product page (sweetwater.com): <main> holds the description, then a list of
    # article.product-review, each a star rating (aria-label "Rated 5 out of 5 stars"), a
    # title, a buyer's text and a byline.  Before: every review came out as the page's text.
    def review(i: int) -> str:
        return (f'<article class="product-review"><header class="product-review__header">'
                f'<span class="rating__stars" role="img" aria-label="Rated {5 - i % 2} out of 5 '
                f'stars"><i aria-hidden="true"></i></span><div class="t-h3">Great interface '
                f'number {i}</div></header><section class="product-review__body">I bought this '
                f"to record my band at home, and it has been easy to set up and sounds great "
                f"with every microphone I tried, review {i}.</section><footer>by <span>Buyer "
                f'{i}</span> on <time datetime="2025-11-24">November 24, 2025</time></footer>'
                f"</article>")
    reviews = "".join(review(i) for i in range(4))
    body = f"""<main><h1>Focusrite Scarlett 4i4 4th Gen</h1>{_SCARLETT * 8}
      <section class="product-reviews"><h2>Reviews</h2>
        <div class="product-reviews__list">{reviews}</div></section></main>"""
    md = convert(body)
    assert md.count("significant upgrade") == 8 and "record my band" not in md
    # a rated list that is the page's outline (a listicle's entries), or product cards
    # without written text, stays
    entries = "".join(f'<div class="entry"><h3>Mover {i}</h3><span aria-label="{i} out of '
                      f'5 stars"></span>{_SCARLETT.replace("4th", f"{i + 4}th")}</div>'
                      for i in range(1, 5))
    cards = "".join(f'<div class="card"><a href="/p/{i}">Beard Oil {i}</a> From $29 '
                    f'<span title="4.6 out of 5 stars"></span></div>' for i in range(4))
    md = convert(f"<main><h1>Best interfaces</h1>{_SCARLETT}<div>{entries}</div>"
                 f"<div>{cards}</div></main>")
    assert "### Mover 4\n" in md and md.count("significant upgrade") == 5
    assert "Beard Oil 3" in md


def test_a_sidebars_dropdown_menus_do_not_make_it_the_page():
    # a Blogger blog (dragnet R59, howaboutorange): a short post beside a sidebar whose
    # "Browse by date" and "Browse by topic" dropdowns list 80 months and 60 labels.  The
    # options are never written, but they counted as text: the sidebar held over half the
    # page, passed for the page's wrapper, and its welcome note came out instead of the post.
    months = "".join(f"<option>{m} {y} ({n})</option>" for y in range(2006, 2013)
                     for n, m in enumerate(("January", "February", "March", "April", "May",
                                            "June", "July", "August", "September",
                                            "October", "November", "December"), 3))
    labels = "".join(f"<option>label number {i} (12)</option>" for i in range(60))
    body = f"""<div id="outer-wrapper"><div id="wrap2">
      <div id="header-wrapper"><div class="header section" id="header">
        <a href="/diy">DIY Tutorials</a> <a href="/free">Free Downloads</a></div></div>
      <div id="content-wrapper"><div id="newsidebar-wrapper">
        <div class="sidebar section" id="newsidebar">
          <div class="widget HTML" id="HTML6"><div class="widget-content">Welcome. I'm
            Jessica Jones, a graphic and textile designer. When I'm not blogging, I'm
            designing. Visit my <a href="/p">portfolio site</a> for more about my day job,
            or check out some more work.</div></div>
          <div class="widget Label" id="Label1"><h2>Browse by topic</h2>
            <div class="widget-content"><select>{labels}</select></div></div>
          <div class="widget BlogArchive" id="BlogArchive1"><h2>Browse by date</h2>
            <div class="widget-content"><select>{months}</select></div></div>
          <div class="widget Text" id="Text1"><div class="widget-content">You're welcome to
            link to How About Orange or use a single image with a brief description to link
            back to any post. Republishing posts in their entirety is prohibited.</div></div>
        </div></div>
      <div id="main-wrapper"><div class="main section" id="main"><div class="widget Blog">
        <div class="blog-posts hfeed"><h2 class="date-header">October 26, 2012</h2>
          <div class="post"><h3 class="post-title">Print your own Halloween mask</h3>
            <div class="post-body">Need a last-minute, do-it-yourself Halloween costume?
              Freelance illustrator Sarah Clark has created free masks you can download,
              print, and assemble. There are three designs to choose from, with one more
              coming soon. Get them here at <a href="/cut">Cut &amp; Fold Costumes</a>.
              <br><br>Have a fun weekend, everyone!</div></div>
          <div class="comments" id="comments"><h4>4 comments:</h4></div>
        </div></div></div></div></div></div></div>"""
    md = convert(body)
    assert "Need a last-minute" in md and "Have a fun weekend" in md
    assert "Welcome. I'm" not in md and "Republishing posts" not in md


def test_a_sites_logo_in_an_h1_does_not_title_the_page():
    # a WordPress blog (dragnet R687, The Blog Herald): the site's logo is the page's one
    # <h1>, an image linking to the front page, above the post and its columns; the post's
    # title is an <h2>.  Before: the text block climbed to the block holding that <h1>, the
    # whole page, and the menu and the network's headline lists came out with the post.
    news = "".join(f'<li><a href="/2012/11/0{i % 9}/story-{i}/">A story from the network '
                   f"number {i}</a></li>" for i in range(20))
    body = f"""<div id="site"><div id="wrap">
      <div id="header"><h1><a href="http://www.blogherald.com" title="The Blog Herald">
        <img src="/bh.jpg" title="The Blog Herald"></a></h1></div>
      <div id="menu"><a href="/">Home</a> • <a href="/news/">News</a> •
        <a href="/editorial/">Editorial</a> • <a href="/features/">Features</a></div>
      <div id="actual"><div class="widecolumn left" id="content">
        <div class="post single"><h2><a href="/2012/11/07/photo/">Obama Photo Becomes Most
          Liked In Facebook History</a></h2>
          <div class="meta"><div class="left">Filed as <a href="/category/news/">News</a>
            on November 7, 2012 11:25 am</div><div class="right"><p>by <a rel="me"
            href="http://parentingpatch.com">James Johnson</a></p></div></div>
          <div class="entry">{_P * 2}</div></div>
        <div class="info"><div class="author left">This post was written by James Johnson.
          You can visit the Author's website, read more posts by him, or follow him on
          Twitter, Facebook and Google Plus, where he writes about blogging and the web.
          </div></div></div>
        <div id="sidebar"><h2>Hot Topics</h2><ul>{news[:400]}</ul></div>
        <div class="widecolumn left"><div class="pos"><ul>
          <li><h2>Latest News from the Network</h2></li>{news}</ul></div></div>
      </div></div></div>"""
    md = convert(body)
    assert md.count("When planning corporate") == 2 and "Most Liked" in md
    assert "Editorial" not in md and "from the network number 12" not in md


def test_a_long_sidebar_beside_a_short_post_is_not_the_page():
    # a Blogger blog (dragnet R570, copyranter): div#sidebar holds three quarters of the
    # page's text, a profile of one long paragraph of commas, beside a post of five lines.
    # A chrome-named block that large passed for the page's wrapper (a header left open
    # around the page), so the profile was taken for the text and the post was lost.
    hates = ", ".join(f"thing number {i}" for i in range(70))
    body = f"""<div id="content"><div id="sidebar"><div id="sidebar2">
      <h1 id="blog-title"><a href="http://copyranter.blogspot.com/">copyranter</a></h1>
      <p id="description">SEND ME TIPS: copyranter(at)gmail(dot)com</p>
      <div id="profile-container"><h2 class="sidebar-title">About Me</h2>
        <dl class="profile-datablock"><dd class="profile-data">Name: copyranter</dd></dl>
        <p class="profile-textblock">The best ad blogger in the world. I hate {hates}.</p>
        <p class="profile-link"><a href="/profile">View my complete profile</a></p></div>
      <h2 class="sidebar-title">Previous Posts</h2><ul id="recently">
        <li><a href="/1.html">top 5 posts from last week</a></li>
        <li><a href="/2.html">Top 5 posts of the week</a></li></ul></div></div>
      <div id="main"><div id="main2"><h2 class="date-header">Monday, October 15, 2012</h2>
        <div class="post"><h3 class="post-title">top 5 BuzzFeed posts of the week.</h3>
          <div class="post-body">• 18 hilarious <a href="/tube">London Tube prank signs</a>
            (above).<br>• 13 brilliant science museum billboards.<br>• A rejection letter
            from the Church of Satan.<br>• Death metal singer sings to his cat (adorable).
            <br>• The 8 most useless pieces of exercise equipment.</div>
          <p class="post-footer">posted by copyranter @ 6:01 PM</p></div>
        <div id="comments"><h4>0 Comments:</h4><a href="/post">Post a Comment</a></div>
      </div></div></div>"""
    md = convert(body)
    assert "London Tube prank signs" in md and "useless pieces of exercise" in md
    assert "thing number 12" not in md and "View my complete profile" not in md
    # a chrome-named wrapper around the post (LogRocket's div.sidebar-container: the TOC
    # aside and the post), beside a short list of recent posts, is still the page's wrapper
    recent = "".join(f"<p><a href='/p{i}'>Another post number {i}</a> A summary of another "
                     "post, in a sentence or two of plain words.</p>" for i in range(4))
    wrapped = convert(f"""<div class="content-max-width"><div class="sidebar-container">
      <aside><ul class="toc"><li><a href="#a">Testing setup</a></li></ul></aside>
      <div id="the-content-container"><div class="lr-content">{_P * 20}</div></div></div>
      <div id="recent-posts"><h2>Recent posts</h2>{recent}</div></div>""")
    assert wrapped.count("When planning corporate") == 20


def test_a_sites_tagline_in_its_header_is_not_the_pages_text():
    # a WordPress design magazine (dragnet R470, plusMOOD): the header's tagline, a long
    # sentence of commas beside the site's name (a link to the front page), scored as a
    # paragraph; with it the post held under 75 % of the score and the pick stayed at the
    # page's wrapper: the tagline, the menu and the footer's "Editor's picks" came out.
    card = ('<div class="post"><h2><a href="/2012/10/{0}/">Haus am Weinberg number {0}</a>'
            '</h2><div class="entry"><p>UNStudio recently has completed the Haus am '
            "Weinberg. The house is located in a setting that is at one time rural, yet "
            "suburban, with views of the stepped terraces of a hillside vineyard.</p></div>"
            "</div>")
    body = f"""<div class="outer-wrap"><div id="wrap">
      <div id="header"><div id="head-content" class="clearfix"><div id="sitetitle">
        <div class="title"><a href="http://plusmood.com">plusMOOD</a></div>
        <div class="description">An online design resource dedicated to everything
          relating to contemporary architecture, interior design, landscape design,
          products and all other aspects of design topics. It serves as an emissary for
          the design profession</div></div></div></div>
      <div id="topnav"><ul class="menu"><li><a href="/">Home</a></li>
        <li><a href="/submit/">Submit Design</a></li><li><a href="/ads/">Advertise</a></li>
        <li><a href="/about/">About</a></li></ul></div>
      <div id="page" class="clearfix"><div id="contentleft">
        <div id="content" class="maincontent">
          <div class="singlepost"><div class="post" id="post-main-46881">
            <h1 class="post-title single"><a href="/2012/11/poltrona/">Poltrona with
              Acoustics \\ Studio KMJ</a></h1>
            <div class="entry"><p>Studio KMJ designed Poltrona with Acoustics. Whether you
              are listening to music or reading a book, the poltrona keeps one shielded.</p>
              <p>The shape of the ROSA chair is inspired by the rose in a particular
              position, as roses or sunflowers direct their head to the sun. The strips
              represent the layers of the rose and contribute to the curves of the
              volume.</p></div></div></div></div></div>
        <div id="contentright"><div id="sidebar" class="clearfix"><div class="widget">
          <h3>+ Stay Connected</h3><div class="intro"><p>+MOOD delivers the design topics
          right to your inbox.</p></div></div></div></div></div>
      <div id="footer-widgets" class="maincontent"><div class="footer-widget2">
        <div class="widget catposts"><h3><a href="/picks/">+ Editor's picks</a></h3>
        <div class="cat-posts-widget">{card.format(1)}{card.format(2)}{card.format(3)}
        </div></div></div></div></div></div>"""
    md = convert(body)
    assert md.startswith("# [Poltrona with Acoustics") and "ROSA chair" in md
    assert "emissary" not in md and "Editor's" not in md and "Weinberg" not in md


def test_a_column_of_blurbs_beside_the_post_is_not_the_page():
    # a blog (dragnet R929, scotthyoung.com) without chrome names: div#left holds the post,
    # two paragraphs side by side; div#right as much score in blurbs, each in its own box
    # (an about note, a course, a book, each with a link).  No column held 75 % of the
    # score, so the pick stopped at the wrapper of both, and every blurb came out.
    blurb = ('<div>{0}? Student? Work at home? Eliminate hours of work, and learn '
             'faster. <a href="/{0}/">Learn More...</a></div>')
    body = f"""<div id="bigGreen"><div id="header"><p class="headerText">Over 850 articles
      devoted to one idea: how to <a href="/">get more from life</a>.</p></div></div>
      <div id="body"><div id="left"><div class="lightPink">
        <div class="post-2589 post hentry" id="post-2589"><h2>Paris Meetup and Upcoming
          Bootcamp</h2><div class="entry"><h3>Paris Meetup</h3>
          <p>I'm having a meet-up in Paris, probably during the evening sometime next week.
            I've done a few meet-ups before, in San Francisco, Vancouver and previously in
            Paris. I prefer to set up the details with possible attendees directly.</p>
          <h3>Learn Faster Bootcamp</h3>
          <p>I'm going to be reopening Learning on Steroids for the first time in over a
            year. Because I hate doing long salesy email campaigns, I'd rather just give
            out a free sample of the course, starting October 24th, for seven days.</p>
          <p>In the bootcamp you will get a lesson a day, by email, with the tactics I
            learned during the MIT Challenge, the exercises, and the readings behind it.</p>
          </div></div></div></div>
        <div id="right"><div class="rightPink"><ul><li class="widget"><div class="textwidget">
          <p class="rightAbouttext">I'm a recent university graduate, writer, programmer,
          traveler and avid reader of interesting things.</p></div></li></ul>
          <div><p>My latest project was to learn MIT's 4-year curriculum for computer
          science in 12 months, without taking any classes.</p></div>
          <div><p>What if I told you everything you know about how to learn is wrong? My
          book shows you a better way to learn, in four weeks.</p></div>
          <div><p>Watch my TEDx talk about the challenge, and the ideas behind it, in
          eighteen minutes.</p></div>
          {blurb.format("Entrepreneur")}{blurb.format("Writer")}{blurb.format("Designer")}
          </div></div></div>"""
    md = convert(body)
    assert "meet-up in Paris" in md and "Learning on Steroids" in md
    assert "Eliminate hours" not in md and "avid reader" not in md


def test_a_reply_box_is_not_content():
    # a WordPress blog (dragnet R929): under the post, div#respond holds "Leave a Reply", a
    # hidden "cancel reply" link and the comment form.  The form was left out, but its box's
    # heading stayed, as if the post ended with a section titled "Leave a Reply".
    body = f"""<div id="left"><div class="post" id="post-2589"><h2>Paris Meetup</h2>
      <div class="entry">{_P * 2}</div></div>
      <p>Debate is fine, flaming is not. Pretend that this comment form is a discussion
        taking place in my house. That means I enjoy constructive criticism and polite
        suggestions. Personal attacks, insults and all-purpose nastiness will be removed,
        especially if it is directed at other readers.</p>
      <div id="respond"><h3>Leave a Reply</h3>
        <div class="cancel-comment-reply"><small><a rel="nofollow" href="#respond"
          style="display:none;">Click here to cancel reply.</a></small></div>
        <form action="/wp-comments-post.php" method="post" id="commentform">
          <p><input type="text" name="author" id="author">
            <label for="author"><small>Name (required)</small></label></p>
          <p><input type="text" name="email" id="email">
            <label for="email"><small>Mail (will not be published) (required)</small>
            </label></p>
          <p><textarea name="comment" id="comment" cols="100%" rows="10"></textarea></p>
          <p><input name="submit" type="submit" id="submit" value="Submit Comment"></p>
        </form></div></div>"""
    md = convert(body)
    assert md.startswith("## Paris Meetup") and md.count("When planning corporate") == 2
    assert "Debate is fine" in md and "Leave a Reply" not in md
    # a form that wraps the page's text (an old server-framework page) is still the page
    page = convert(f'<form id="Form1" action="/a.aspx"><h1>Results</h1>{_P * 8}'
                   '<div><h3>Leave a comment</h3><textarea name="c"></textarea></div></form>')
    assert page.startswith("# Results") and page.count("When planning corporate") == 8


def test_one_short_post_under_its_linked_title_is_not_a_teaser():
    # a Blogger blog (dragnet R59): the post's title links to its own permalink and the
    # post is short, so it looked like a teaser card of another page and scored a fifth:
    # the pick stayed at the page's wrapper, with the sidebar's welcome note and widgets.
    # A card among others is a teaser; one alone is the page's post.
    body = """<div id="outer-wrapper"><div id="wrap2">
      <div id="header-wrapper"><h1><a href="/">How About Orange</a></h1></div>
      <div id="content-wrapper"><div id="newsidebar-wrapper">
        <div class="sidebar section" id="newsidebar">
          <div class="widget HTML"><div class="widget-content">Welcome. I'm Jessica Jones, a
            graphic and textile designer. When I'm not blogging, I'm designing, sewing,
            and drawing.</div></div>
          <div class="widget Text"><div class="widget-content">You're welcome to link to
            How About Orange or use a single image with a brief description to link back to
            any post, but republishing posts in their entirety is prohibited.</div></div>
        </div></div>
      <div id="main-wrapper"><div class="main section" id="main"><div class="widget Blog">
        <div class="blog-posts hfeed"><div class="post-outer"><div class="post">
          <h3 class="post-title"><a href="/2012/10/print-your-own-halloween-mask.html">Print
            your own Halloween mask</a></h3>
          <div class="post-body"><div>Need a last-minute, do-it-yourself Halloween costume?
            Freelance illustrator Sarah Clark has created free masks you can download,
            print, and assemble. There are three designs to choose from, with one more
            coming soon. Get them <a href="/cut">here at Cut &amp; Fold Costumes</a>.
            <br>Have a fun weekend, everyone!</div></div></div></div></div>
        <div class="post-feeds">Subscribe to: <a href="/feeds">Post Comments (Atom)</a>
        </div></div></div></div></div>
      <div id="credit">Copyright 2006–2012 Jessica Jones, How About Orange. Feel free to pin
        on Pinterest!</div></div></div>"""
    md = convert(body)
    assert "Need a last-minute" in md and "Have a fun weekend" in md
    assert "Welcome. I'm" not in md and "republishing" not in md


_IANS = ("<p>The Defence Research and Development Organisation plans to test fire the missile "
         "in mid-2009, and it will be able to hit targets in the range of 5,000 km, officials "
         "said on Monday.</p>")


def test_a_stories_tool_bars_are_left_out():
    # news pages of 2008 (L3S-GN1): print/e-mail links in a layout table's cell ("» Print
    # this article", each link's text broken over lines), a social bookmark bar ("Digg |
    # Del.icio.us"), text size buttons.  Before: each came out as a line of the story (two
    # links are no menu, a table's cell was never judged, "Print this article" was no widget
    # text).
    body = f"""<table><tr><td><div class="story"><h1>DRDO to test Agni-IV</h1>{_IANS * 5}
        <p><b>Print</b> the form, sign it and send it back to the office by Friday.</p>
        <table><tr><th>Keys</th><th>Action</th></tr><tr><td>Ctrl+P</td><td>Print</td></tr>
          <tr><td>Ctrl+S</td><td>Save</td></tr></table>
        <div class="tools"><span>Font size:</span> <a href="#">Decrease</a>
          <a href="#">Increase</a></div>
        <div class="bm"><a href="/d">Digg</a> | <a href="/de">Del.icio.us</a></div>
        <table><tr><td><div align="left"><font size="2"><strong>&raquo;</strong><a href="#">
          <strong>Print
          this article</strong></a><br><strong>&raquo; </strong><a href="#"><strong>Email
          this article</strong></a><br></font></div></td></tr></table>
      </div></td></tr></table>"""
    md = convert(body)
    assert md.count("The Defence Research") == 5
    assert "Print this article" not in md and "Email" not in md
    assert "Digg" not in md and "Del.icio.us" not in md and "Decrease" not in md
    # a word of a sentence and a data table's cell are not tools
    assert "**Print** the form, sign it" in md and "| Ctrl+P | Print |" in md


def test_an_empty_comment_boxs_prompts_are_left_out():
    # news pages of 2008 (L3S-GN1): under the story, a comment box with no comments, only
    # its prompts.  Before: they came out as the story's last lines.
    body = f"""<div id="content"><h1>DRDO to test Agni-IV</h1>{_IANS * 5}
      <p>No comments were made about the test by the ministry, the agency said.</p>
      <div class="kommentare"><h3>Your opinion</h3>
        <div><span>No comments at the moment.</span><br>
          <span>Only members of the Club can enter comments.</span></div></div>
      <table><tr><td><a href="/c">Add your comments here</a><br>
        <i>No comments submitted yet</i></td></tr></table></div>"""
    md = convert(body)
    assert md.count("The Defence Research") == 5 and "No comments were made" in md
    assert "at the moment" not in md and "Only members" not in md
    assert "Add your comments" not in md and "submitted yet" not in md
    # a comment thread that is there stays as it was (some sets' truth keeps threads)
    thread = convert(f"""<div id="content"><h1>Agni-IV</h1>{_IANS * 5}<h3>3 Comments</h3>
      <ol class="commentlist"><li><cite>Ravi</cite> said: Good news for the programme, and
        about time, after the delays of the last two years.</li>
        <li><cite>Anil</cite> said: The range is what matters here, not the date of the
        test, as the agency itself admits.</li></ol>
      <p><a href="#respond">Post a comment</a></p></div>""")
    assert "Good news for the programme" in thread and "The range is what matters" in thread
    assert "Post a comment" not in thread


def test_a_page_that_goes_on_after_its_closing_html_tag_is_read_whole():
    # a WordPress theme (an HR services blog) prints its header, then </body></html>, then
    # the post.  A browser shows the post (HTML5 parses what follows into the body); before,
    # libxml2 dropped everything after </html>, and only the menu was left: an empty page.
    page = f"""<!DOCTYPE html><html><head><title>6 Types of HR Outsourcing</title></head>
      <body class="single-post"><header><nav><ul><li><a href="/">Home</a></li>
        <li><a href="/blog/">Blogs</a></li><li><a href="/contact-us/">Contact Us</a></li>
      </ul></nav></header>
      </body>
      </html>
      <div class="blog-detail-page"><h1>6 Types of HR Outsourcing You Need to Know</h1>
        {_P * 4}<h2>Professional Employer Organizations</h2>{_P * 2}</div>
      <footer><p>Escalon Services. All rights reserved.</p></footer>
      </body></html>"""
    md = html_to_markdown(page, "https://example.com/blog/hr-outsourcing").markdown
    assert "# 6 Types of HR Outsourcing You Need to Know" in md
    assert md.count("When planning corporate") == 6 and "Contact Us" not in md
    # a page that ends at its </html> (a comment after it, as caches add) is as it was
    plain = html_to_markdown(f"<html><body><h1>Events</h1>{_P * 3}</body></html>\n"
                             "<!-- cached page -->", "https://example.com/").markdown
    assert plain.count("When planning corporate") == 3


def test_teasers_written_as_a_definition_list_are_left_out():
    # a news site of 2008 (L3S-GN1): under the story, boxes of other stories, each a <dl>
    # whose terms are headline links and whose descriptions are their summaries.  Before:
    # nothing judged a <dl> (teaser cards need a heading), and they came out as the story's
    # last quarter.
    teaser = ("<dt><a href='/news/{0}.html'>Hops shortage spurs microbreweries, part {0}</a></dt>"
              "<dd>A worldwide shortage of hops is forcing some microbreweries to rewrite their "
              "recipes for trademark beers.</dd>")
    body = f"""<div id="content"><h1>Premier tours the flooded city</h1>{_IANS * 8}
      <div class="lineuproll"><h3><a href="/rss.xml"><img src="/rss.gif"></a>Headlines</h3>
        <dl>{"".join(teaser.format(i) for i in range(4))}</dl></div></div>"""
    md = convert(body)
    assert md.count("The Defence Research") == 8
    assert "Hops shortage" not in md and "Headlines" not in md
    # a "see also" list (links, a few words each) and a glossary (terms, not links) stay
    kept = convert(f"""<div id="content"><h1>Playbooks</h1>{_IANS * 5}<dl>
      <dt><a href="/lint/">ansible-lint</a></dt><dd>Learn how to test playbooks</dd>
      <dt><a href="/yaml/">YAML Syntax</a></dt><dd>Learn about YAML syntax</dd>
      <dt><a href="/tips/">General tips</a></dt><dd>Tips for managing playbooks</dd></dl>
      <dl><dt>Agni-IV</dt><dd>{"A surface-to-surface missile of intermediate range. " * 2}</dd>
      <dt>Agni-V</dt><dd>{"An intercontinental missile, tested first in 2012. " * 2}</dd>
      <dt>Prithvi</dt><dd>{"A short-range missile, the first of the programme. " * 2}</dd></dl>
      </div>""")
    assert "Learn about YAML syntax" in kept and "Tips for managing" in kept
    assert "A surface-to-surface missile" in kept and "tested first in 2012" in kept


def test_the_author_cards_beside_a_threads_posts_keep_only_the_name():
    # forum threads (a XenForo board, a Q&A site): beside each post, the author's card
    # (schema.org Person) with a member title, join date, post count, location, reputation.
    # Before: each card came out as five lines of numbers and dates above every post.
    post = """<article class="message message--post"><div class="message-inner">
      <div class="message-cell message-cell--user"><section itemscope
          itemtype="https://schema.org/Person" class="message-user">
        <div class="message-avatar"><a href="/members/{0}.5/"><img src="/a/{0}.webp"
          alt="{0}"></a></div>
        <div class="message-userDetails"><h4 class="message-name"><a href="/members/{0}.5/"
          class="username" itemprop="name">{0}</a></h4>
          <div class="userBanner" itemprop="jobTitle"><strong>Senior Member</strong></div></div>
        <div class="message-userExtras"><dl class="pairs"><dt><span title="Joined"><i
          class="fa-user"></i></span></dt><dd>Oct 25, 2017</dd></dl>
          <dl class="pairs"><dt><span title="Messages"></span></dt><dd>13,539</dd></dl>
          <dl class="pairs"><dt><span title="Location"></span></dt><dd>Ghent</dd></dl>
        </div></section></div>
      <div class="message-cell message-cell--main"><div class="message-content">
        <div class="bbWrapper">Post {0}: we would waste an hour trying to say his name, and
        then another one deciding who goes first into the cave.</div></div></div>
      </div></article>"""
    body = f"""<div class="p-body-pageContent"><h1>Who fights the giant?</h1>
      <div class="block-body">{"".join(post.format(n) for n in ("Poltergust", "Saikyo",
                                                               "poptire"))}</div></div>"""
    md = convert(body)
    assert "Poltergust" in md and "Saikyo" in md and md.count("we would waste an hour") == 3
    assert "Senior Member" not in md and "13,539" not in md and "Oct 25, 2017" not in md
    assert "Ghent" not in md
    # a team page's people with their bios keep every line (a title beside a sentence)
    person = """<div itemscope itemtype="http://schema.org/Person" class="member">
      <h3 itemprop="name">{0}</h3><p itemprop="jobTitle">Head of Research</p>
      <p itemprop="description">{0} leads the research group, which studies how rivers
      carry sediment to the sea in every season.</p></div>"""
    team = convert(f"""<div class="team"><h1>Our team</h1>{"".join(
        person.format(n) for n in ("Ann Lee", "Bo Ray", "Cy Tan"))}</div>""")
    assert team.count("Head of Research") == 3 and team.count("leads the research") == 3
