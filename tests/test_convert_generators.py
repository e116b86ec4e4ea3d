"""Issue 19: rules that hold on generators the converter was not tuned on.  Each rule is
checked on markup of a generator other than the one whose page prompted it (abridged, class
names and nesting as those generators ship them), rendered back with CommonMark + GFM."""

from __future__ import annotations

from sitemap_crawler.convert.markdown import html_to_markdown
from tests.test_convert_structure import code_blocks, convert, rendered

URL = "https://docs.example.com/guide/page/"
ARTICLE = '<meta property="og:type" content="article">'


def _rows(md: str) -> list[list[str]]:
    table = rendered(md).find(".//table")
    assert table is not None, md
    return [[" ".join("".join(c.itertext()).split()) for c in tr] for tr in table.iter("tr")]


def test_news_page_keeps_code_figures_and_drops_photo_figures():
    # Jekyll (Rouge) wraps highlighted code in <figure class="highlight">; blogs say
    # og:type=article.  Prompted by <figure><pre data-language> (Expressive Code).
    body = """<main><article><h1>Caching in Ruby</h1>
      <p>Memoise the expensive call, and keep the cache small enough to fit.</p>
      <figure class="highlight"><pre><code class="language-ruby" data-lang="ruby">
<span class="k">def</span> <span class="nf">price</span>
  <span class="vi">@price</span> <span class="o">||=</span> <span class="n">fetch</span>
<span class="k">end</span></code></pre></figure>
      <figure><img src="/cat.jpg" alt="A cat"><figcaption>Our cat. Photo: staff</figcaption>
      </figure></article></main>"""
    md = convert(body, head=ARTICLE)
    assert code_blocks(md) == ["def price\n  @price ||= fetch\nend\n"]
    assert "```ruby" in md and "Our cat" not in md and "cat.jpg" not in md


def test_class_words_do_not_remove_headings_terms_inline_text_or_prose():
    # mdBook headings are <a class="header">; Asciidoctor's menu macro is <b class="menu">;
    # a doc comment box under a comment-sounding name holds the API's prose.
    body = """<main>
      <h2 id="install"><a class="header" href="#install">Install</a></h2>
      <p>Open the project, select <span class="menuseq"><b class="menu">Properties</b>
        &#9656; <b class="submenu">Libraries</b></span> and add the jar.</p>
      <h4 class="code-header">pub fn len(&amp;self) -&gt; usize</h4>
      <div class="api-comment"><p>Returns the number of elements in the vector, also
        referred to as its length, counted once for every element pushed so far.</p></div>
    </main>"""
    md = convert(body)
    assert md.startswith("## [Install](")
    assert "select **Properties** ▸ **Libraries** and add" in md
    assert "pub fn len(&self) -> usize" in md
    assert "Returns the number of elements" in md


def test_a_comment_thread_is_still_removed():
    # WordPress: ol.commentlist of li.comment items and a reply form
    story = "<p>" + "The post itself, in full sentences, with details and commas. " * 8 + "</p>"
    thread = ('<div id="comments" class="comments-area"><h3>2 comments</h3>'
              '<ol class="commentlist"><li class="comment"><p>' + "Nice post, thanks a lot "
              "for writing it up so clearly and in such detail. " * 3 + '</p></li>'
              '<li class="comment"><p>' + "I disagree with the second point, because the "
              "cache has to be invalidated somewhere, sometime. " * 3 + "</p></li></ol>"
              '<form id="commentform"><textarea name="comment"></textarea></form></div>')
    md = convert(f"<article><h1>Post</h1>{story}{thread}</article>", head=ARTICLE)
    assert "The post itself" in md and "Nice post" not in md and "disagree" not in md


def test_a_math_ignore_wrapper_is_not_math():
    # Jupyter Book / MyST-NB pages wrap the whole page in "tex2jax_ignore mathjax_ignore"
    body = """<main><div class="tex2jax_ignore mathjax_ignore section" id="intro">
      <h1>Intro</h1><p>Text with <code>x</code>.</p>
      <div class="highlight-python notranslate"><div class="highlight"><pre><span></span>
x = 1</pre></div></div>
      <table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
      <div class="math notranslate nohighlight">\\[e^{i\\pi} = -1\\]</div>
    </div></main>"""
    md = convert(body)
    assert md.startswith("# Intro\n")
    assert code_blocks(md) == ["x = 1\n"]
    assert _rows(md) == [["a", "b"], ["1", "2"]]
    assert "\\[e^{i\\pi} = -1\\]" in md


def test_per_line_code_without_pre_is_fenced_with_gutters_left_out():
    # Doxygen's div.fragment of div.line (span.comment inside is code, not a widget)
    body = """<div id="doc-content"><div class="contents"><p>Example:</p>
      <div class="fragment"><div class="line"><a id="l00001" name="l00001"></a><span class="lineno">    1</span><span class="preprocessor">#include &lt;vector&gt;</span></div>
<div class="line"><span class="lineno">    2</span><span class="keywordtype">int</span> n = 0; <span class="comment">// count</span></div>
<div class="ttc" id="aVec"><div class="ttname"><a href="a1.html">std::vector</a></div><div class="ttdoc">A container.</div></div>
</div></div></div>"""  # noqa: E501
    assert code_blocks(convert(body)) == ["#include <vector>\nint n = 0; // count\n"]


def test_lexer_names_become_highlighter_names():
    body = '<main><div class="highlight-python3"><div class="highlight"><pre>x = 1</pre>' \
           '</div></div><pre><code class="language-pycon">&gt;&gt;&gt; 1</code></pre></main>'
    md = convert(body)
    assert md.count("```python\n") == 2


def test_heading_anchor_screen_reader_text_and_api_controls_do_not_leak():
    # Starlight's anchor carries "Section titled ..." for screen readers; rustdoc has
    # "source", "Run" and "Expand description"; Sphinx viewcode "[source]".
    body = """<main><div class="sl-heading-wrapper level-h2"><h2 id="setup">Setup</h2>
      <a class="sl-anchor-link" href="#setup"><span aria-hidden="true" class="sl-anchor-icon">
      <svg></svg></span><span class="sr-only">Section titled “Setup”</span></a></div>
      <p>Run the installer first.</p>
      <details class="toggle top-doc" open><summary class="hideme"><span>Expand description
      </span></summary><div class="docblock"><p>A contiguous growable array type.</p></div>
      </details>
      <section class="impl"><a class="src rightside" href="../src/vec.rs.html#1">source</a>
      <h3 class="code-header">impl Vec</h3></section>
      <div class="example-wrap"><pre class="rust rust-example-rendered"><code>let v = 1;</code>
      </pre><a class="test-arrow" href="https://play.example.org/?code=x">Run</a></div>
      <dl><dt class="sig"><span class="sig-name">load</span>()<a class="reference internal"
      href="_modules/m.html#load"><span class="viewcode-link"><span class="pre">[source]</span>
      </span></a></dt><dd><p>Load it.</p></dd></dl>
      <p>See the <a class="reference external" href="https://example.org/src">source</a> of
      it.</p></main>"""
    md = convert(body)
    assert "Section titled" not in md and "Expand description" not in md
    assert "**load()**\n\nLoad it." in md and "Run" not in md.split("\n")
    assert "](https://play" not in md
    assert "## Setup" in md and "A contiguous growable array type." in md
    assert "See the [source](https://example.org/src) of it." in md


def test_admonition_labels_from_hidden_titles_icons_and_custom_blocks():
    starlight = """<aside aria-label="Tip" class="starlight-aside starlight-aside--tip">
      <p class="starlight-aside__title" aria-hidden="true"><svg></svg>Tip</p>
      <section class="starlight-aside__content"><p>Cache the build.</p></section></aside>"""
    asciidoctor = """<div class="admonitionblock warning"><table><tr><td class="icon">
      <i class="fa icon-warning" title="Warning"></i></td><td class="content">Back up first.
      </td></tr></table></div>"""
    vitepress = """<div class="tip custom-block"><p class="custom-block-title">TIP</p>
      <p>Use the CLI.</p></div>"""
    md = convert(f"<main>{starlight}{asciidoctor}{vitepress}</main>")
    assert "> **Tip**\n>\n> Cache the build." in md
    assert "> **Warning**\n>\n> Back up first." in md
    assert "> **TIP**\n>\n> Use the CLI." in md
    assert "|" not in md


def test_tab_labels_go_above_their_panels():
    # Bootstrap tabs (pkgdown, many Hugo themes): links to panel ids, panels without roles
    body = """<main><ul class="nav nav-tabs"><li class="nav-item"><a class="nav-link active"
      data-toggle="tab" href="#json" role="tab">JSON</a></li><li class="nav-item"><a
      class="nav-link" data-toggle="tab" href="#yaml" role="tab">YAML</a></li></ul>
      <div class="tab-content"><div class="tab-pane active" id="json"><pre>{"a": 1}</pre></div>
      <div class="tab-pane" id="yaml" style="display: none"><pre>a: 1</pre></div></div>
    </main>"""
    md = convert(body)
    assert md == '**JSON**\n\n```\n{"a": 1}\n```\n\n**YAML**\n\n```\na: 1\n```\n'


def test_role_tables_css_grids_and_a_spanning_title_row():
    aria = """<div role="table"><div role="rowgroup"><div role="row">
      <span role="columnheader">Prop</span><span role="columnheader">Type</span></div></div>
      <div role="rowgroup"><div role="row"><span role="cell">size</span>
      <span role="cell">number</span></div></div></div>"""
    grid = """<div class="grid grid-cols-3 gap-2"><div>Option</div><div>Default</div>
      <div>Meaning</div><div>retries</div><div>3</div><div>how often</div></div>"""
    javadoc = """<div class="summary-table two-column-summary">
      <div class="table-header col-first">Modifier and Type</div>
      <div class="table-header col-last">Method</div>
      <div class="col-first even-row-color"><code>static boolean</code></div>
      <div class="col-last even-row-color"><code>isEmpty(String s)</code></div></div>"""
    docbook = """<table class="table" border="1"><tr><th colspan="2">Table 9.1. Operators
      </th></tr><tr><th>Operator</th><th>Description</th></tr><tr><td>&lt;</td>
      <td>less than</td></tr></table>"""
    md = convert(f"<main><h1>API</h1>{aria}<p>x</p>{grid}<p>y</p>{javadoc}<p>z</p>"
                 f"{docbook}</main>")
    tables = [[[" ".join("".join(c.itertext()).split()) for c in tr] for tr in t.iter("tr")]
              for t in rendered(md).iter("table")]
    assert tables == [[["Prop", "Type"], ["size", "number"]],
                      [["Option", "Default", "Meaning"], ["retries", "3", "how often"]],
                      [["Modifier and Type", "Method"], ["static boolean", "isEmpty(String s)"]],
                      [["Operator", "Description"], ["<", "less than"]]]
    assert "**Table 9.1. Operators**" in md


def test_text_inside_a_page_wide_form_is_kept_a_filter_form_is_not():
    # ASP.NET WebForms wraps the whole body in <form id="form1">
    text = "<p>" + "The quarterly report explains where the money went, and why. " * 6 + "</p>"
    body = f"""<form method="post" action="./Report.aspx" id="form1">
      <input type="hidden" name="__VIEWSTATE" value="x"><div id="wrapper">
      <h1>Quarterly report</h1>{text}</div></form>"""
    md = convert(body)
    assert md.startswith("# Quarterly report\n") and "where the money went" in md
    listing = """<main><h1>Shoes</h1><form class="filters"><label>Sort by</label><select>
      <option>Price</option></select><button>Apply</button></form>
      <p>Forty pairs of shoes for every kind of walk, from trails to town.</p></main>"""
    md = convert(listing)
    assert "Sort by" not in md and "Forty pairs" in md


def test_docbook_page_in_site_chrome_keeps_every_section_and_drops_navigation():
    # A DocBook refentry (PostgreSQL reference pages) inside a site layout without <main>
    nav = ('<div class="navheader"><table width="100%" summary="Navigation header"><tr>'
           '<th colspan="5" align="center">ALTER VIEW</th></tr><tr><td><a accesskey="p" '
           'href="sql-alteruser.html" title="ALTER USER">Prev</a> </td><td><a accesskey="u" '
           'href="sql-commands.html" title="SQL Commands">Up</a></td><th>SQL Commands</th>'
           '<td><a href="index.html">Home</a></td><td><a accesskey="n" href="sql-analyze.html"'
           ' title="ANALYZE">Next</a></td></tr></table><hr></div>')
    sect = ('<div class="refsect1" id="{id}"><h2>{t}</h2><p>' + "Words about {t}, and more "
            "words so that the section has weight. " * 3 + "</p>{extra}</div>")
    params = "".join(f"<dl><dt><code>p{i}</code></dt><dd><p>The parameter {i}, described at "
                     "length, with commas, as reference pages do.</p></dd></dl>"
                     for i in range(12))
    ref = ('<div class="refentry" id="SQL-ALTERVIEW"><div class="titlepage"></div>'
           '<div class="refnamediv"><h2>ALTER VIEW</h2><p>ALTER VIEW — change a view</p></div>'
           '<div class="refsynopsisdiv"><h2>Synopsis</h2><pre class="synopsis">ALTER VIEW name'
           ' RENAME TO new_name</pre></div>'
           + sect.format(id="d", t="Description", extra="")
           + sect.format(id="p", t="Parameters", extra=params)
           + sect.format(id="n", t="Notes", extra="")
           + sect.format(id="e", t="Examples", extra="") + "</div>")
    side = "<div id='pgSideWrap'><ul>" + "".join(
        f"<li><a href='/docs/{i}'>Chapter {i} of the manual</a></li>" for i in range(40)) \
        + "</ul></div>"
    page = (f"<html><body><div id='pgHeader'><a href='/'>Home</a></div><div id='pgContentWrap'>"
            f"{side}<div id='docContent'>{nav}{ref}{nav.replace('navheader', 'navfooter')}"
            "</div></div></body></html>")
    md = html_to_markdown(page, "https://www.example.org/docs/15/sql-alterview.html").markdown
    heads = [ln for ln in md.split("\n") if ln.startswith("#")]
    assert heads == ["## ALTER VIEW", "## Synopsis", "## Description", "## Parameters",
                     "## Notes", "## Examples"]
    assert "Prev" not in md and "Chapter 3" not in md and "ALTER VIEW name RENAME" in md


def test_deep_nesting_and_huge_text_nodes_lose_no_text():
    n = 1_000_000
    deep = ("<html><body>" + "<div>" * n + "<p>the bottom</p>" + "</div>" * n
            + "<p>after the nesting</p></body></html>")
    md = html_to_markdown(deep, URL).markdown
    assert "the bottom" in md and "after the nesting" in md
    big = ("<html><body><main><h1>Log</h1><p>" + "entry " * 2_000_000 + "THE END</p>"
           "<p>last paragraph</p></main></body></html>")  # a 12 MB text node
    md = html_to_markdown(big, URL).markdown
    assert md.startswith("# Log\n") and "THE END" in md and "last paragraph" in md


def test_source_views_behind_a_toggle_are_left_out():
    # mkdocstrings: <details class="quote"><summary>Source code in pkg/mod.py</summary>
    body = """<main><h1>mod</h1><div class="doc doc-object doc-function">
      <h2 id="mod.load" class="doc doc-heading"><code>load(path)</code></h2>
      <div class="doc doc-contents"><p>Load the file at path and return its records.</p>
      <details class="quote"><summary>Source code in <code>pkg/mod.py</code></summary>
      <div class="highlight"><pre><code>def load(path):
    return open(path).read()</code></pre></div></details></div></div></main>"""
    md = convert(body)
    assert "Load the file at path" in md and "open(path)" not in md and "Source code" not in md


def test_a_widget_line_does_not_take_its_titled_entry_with_it():
    # a short changelog entry (Keep a Changelog rendered by any generator) with a date line
    body = """<main><h1>Changes</h1><section><h3 id="v1-2">1.2.0</h3><p>Fixed the retry
      loop.</p><p>Last updated 2024-01-02</p></section><section><h3 id="v1-1">1.1.0</h3>
      <p>Added proxies.</p></section></main>"""
    md = convert(body)
    assert "### 1.2.0\n\nFixed the retry loop." in md and "Last updated" not in md


def test_the_title_above_a_column_of_entries_belongs_to_it():
    # no <main>: the h1 sits in a title block above the member groups (TypeDoc's layout,
    # here as Dokka/Jazzy-style API pages put it)
    entries = "".join(f"<section class='member'><h3 id='m{i}'>method{i}</h3><p>Does thing "
                      f"number {i} to the receiver, with care, and returns it.</p></section>"
                      for i in range(8))
    body = f"""<div class="page"><div class="title"><h1>Class Widget</h1></div>
      <div class="intro"><p>A widget.</p></div><div class="group"><section>{entries}</section>
      </div></div><div class="sidebar"><ul>{"<li><a href='/x'>Other</a></li>" * 20}</ul></div>"""
    md = convert(body)
    assert md.startswith("# Class Widget\n") and "method7" in md and "Other" not in md


def test_side_columns_of_teasers_and_bios_do_not_widen_a_page_without_main():
    # a classic blog/news theme with no <main>/<article>: A-Z menu, story, bio and teasers
    story = "".join(f"<p>Paragraph {i} of the story, with several clauses, details, and "
                    f"numbers like {i * 7}, told in full sentences so it reads as prose.</p>"
                    for i in range(6))
    bio = ("<div class='bio'><h3>About the author</h3><p>Jane Roe writes about cities, "
           "transport, and the people who plan them, and has done so for twenty years.</p>"
           "</div>")
    teasers = "".join(f"<div class='teaser'><h4><a href='/s{i}'>Another story {i}</a></h4>"
                      "<p>A summary of another story, with a clause, and another clause, "
                      "long enough to count as text.</p></div>" for i in range(6))
    az = "<div class='az'>" + " ".join(f"<a href='/{c}'>{c}</a>" for c in "ABCDEFGHIJ") + \
        "</div>"
    page = (f"<html><body><div id='page'><div id='top'><a href='/'>Site</a></div><div id='wrap'>"
            f"<div id='left'>{az}</div><div id='content'><h1>The story</h1>{story}</div>"
            f"<div id='right'>{bio}<div class='more'><h3>More stories</h3>{teasers}</div></div>"
            "</div><div id='bottom'>Site</div></div></body></html>")
    md = html_to_markdown(page, "https://news.example.org/story").markdown
    assert md.startswith("# The story\n") and "Paragraph 5" in md
    assert "About the author" not in md and "Another story" not in md and "[A]" not in md


def test_main_drops_related_cards_carousels_and_newsletter_copy():
    # a shop blog's <main>: the post, then cards of other posts (with prices) and a signup box
    post = "".join(f"<p>Step {i}: oil the chain, wipe it, and check the links for wear, "
                   "because a worn chain wears the cassette too.</p>" for i in range(5))
    cards = "".join(f"<div class='c'><a href='/p{i}'><img src='/i{i}.jpg' alt=''></a>"
                    f"<h3><a href='/p{i}'>Bike part {i}</a></h3><p>Light and strong, it fits "
                    f"most frames.</p><span>$ {i}9.99</span></div>" for i in range(4))
    body = (f"<main><h1>Chain care</h1>{post}<section><h2>You may also like</h2>"
            f"<div class='row'>{cards}</div></section><div class='box'><p>Sign up for our "
            "newsletter and get 10% off.</p></div></main>")
    md = convert(body)
    assert md.startswith("# Chain care\n") and "Step 4" in md
    assert "Bike part" not in md and "$ 19.99" not in md and "newsletter" not in md


def test_table_rows_and_cells_are_data_not_widgets():
    # pandoc names its header row tr.header; a cell may read like a widget ("Version 2.4")
    body = """<main><h1>Support</h1><p>Which releases get what.</p><table>
      <thead><tr class="header"><th>Module</th><th>Compatibility</th></tr></thead><tbody>
      <tr class="odd"><td>xml2enc</td><td>Version 2.4 and later</td></tr>
      <tr class="even"><td>proxy</td><td>Last updated in 2.4.8</td></tr></tbody></table></main>"""
    assert _rows(convert(body)) == [["Module", "Compatibility"],
                                    ["xml2enc", "Version 2.4 and later"],
                                    ["proxy", "Last updated in 2.4.8"]]


def test_a_code_blocks_language_label_is_not_a_line_of_text():
    # a blog theme's code header (label + copy button above the block); VitePress' span.lang
    # prompted the rule
    body = """<main><h1>Setup</h1><p>Install it first.</p><div class="code-block">
      <div class="code-bar"><span>python</span><button>Copy</button></div>
      <pre><code class="language-python">import tool</code></pre></div>
      <p>The word python in a sentence stays.</p></main>"""
    md = convert(body)
    assert "```python\nimport tool\n```" in md
    assert "python" not in md.replace("```python", "").replace("word python", "")


def test_a_page_that_is_mostly_one_data_table_keeps_its_heading_and_intro():
    # Asciidoctor, no <main>: a section whose data table holds most of the text (PostgreSQL's
    # DocBook catalog pages prompted the rule)
    rows = "".join(f"<tr><td class='tableblock'><p class='tableblock'><code>col{i}</code></p>"
                   f"</td><td class='tableblock'><p class='tableblock'>What column {i} holds, "
                   "with its units, its default, and when it is null.</p></td></tr>"
                   for i in range(30))
    page = f"""<html><body><div id="header"><h1>Catalogs</h1></div><div id="content">
      <div class="sect1"><h2 id="_columns">The columns</h2><div class="sectionbody">
      <div class="paragraph"><p>The catalog stores one row per function.</p></div>
      <table class="tableblock frame-all grid-all stretch"><caption class="title">Table 1.
      Columns</caption><thead><tr><th class="tableblock">Name</th><th class="tableblock">
      Meaning</th></tr></thead><tbody>{rows}</tbody></table></div></div></div>
      <div id="footer"><div id="footer-text">Last updated 2024-01-01</div></div>
      </body></html>"""
    md = html_to_markdown(page, URL).markdown
    assert "## The columns\n\nThe catalog stores one row per function." in md
    assert _rows(md)[0] == ["Name", "Meaning"] and "col29" in md


def test_last_update_dates_do_not_leak():
    # MkDocs Material's git-revision-date plugin writes "Last update: <date>"
    body = """<main><article class="md-content__inner"><h1>Guide</h1><p>Body text of the
      guide, long enough to be the page.</p><aside class="md-source-file"><span
      class="md-source-file__fact">Last update: <span class="git-revision-date">March 3,
      2024</span></span></aside></article></main>"""
    assert convert(body) == "# Guide\n\nBody text of the guide, long enough to be the page.\n"


def test_the_space_at_a_links_edge_stays_outside_the_link():
    # rustdoc writes "&mut " inside the link of a type ("<a>&amp;mut </a>__H"); editors
    # leave "<a>the tool </a>daily" in prose
    body = ('<main><h4 class="code-header">fn hash(state: <a class="primitive" '
            'href="../primitive.reference.html">&amp;mut </a>__H)</h4><p>Use <a href="/x">the '
            "tool </a>daily, and <a href='/y'> again</a>.</p></main>")
    md = convert(body)
    assert "[&mut](https://docs.example.com/guide/primitive.reference.html) \\_\\_H)" in md
    assert "Use [the tool](https://docs.example.com/x) daily, and " \
        "[again](https://docs.example.com/y)." in md


def test_a_title_block_beside_the_text_is_kept_above_it():
    # DocBook chapter page (no <main>): title page with the chapter's h2, a TOC, then the
    # section holding the text (AsciiDoc's div#header beside div#content prompted the rule)
    para = "<p>" + "Exceptions are thrown, caught, and reported, with a message each. " * 4 \
        + "</p>"
    page = f"""<html><body><div class="navheader"><a href="p.html">Prev</a></div>
      <div class="chapter"><div class="titlepage"><div><div><h2 class="title">Chapter 5.
      Diagnostics</h2></div></div></div><div class="toc"><dl class="toc"><dt><a
      href="#exc">Exceptions</a></dt></dl></div><div class="section"><div class="titlepage">
      <h2 class="title" id="exc">Exceptions</h2></div>{para * 5}</div></div>
      <div class="navfooter"><a href="n.html">Next</a></div></body></html>"""
    md = html_to_markdown(page, URL).markdown
    assert md.startswith("## Chapter 5. Diagnostics\n\n## Exceptions\n")
    assert "Prev" not in md and "Next" not in md


def test_links_to_the_readers_own_disk_are_text():
    # Debian rewrites Javadoc's and Haddock's links to file:///usr/share/doc/...: a web
    # reader cannot follow them, and CommonMark renderers show them as raw text
    body = ('<main><h1>StringUtils</h1><p>Takes a <a href="file:///usr/share/doc/'
            'default-jdk-doc/api/java/lang/String.html" title="class in java.lang">String</a>'
            " and trims it.</p></main>")
    assert convert(body) == "# StringUtils\n\nTakes a String and trims it.\n"


def test_a_story_in_lines_split_by_br_outweighs_a_short_sidebar():
    # phpBB posts are one div.content of lines parted by <br>; each line is a paragraph for
    # the density pick, not one paragraph capped at its length (a blog's story prompted it)
    line = "The upgrade went fine on the test box after the cache was cleared twice. " * 2
    post = '<div class="postbody"><div class="content">' + "<br><br>".join(
        [line] * 8) + "</div></div>"
    side = ('<div class="column"><p>Our forum is run by volunteers from the whole region.</p>'
            "<p>Please read the rules before posting in any board of ours.</p>"
            "<p>The next meeting is in the town hall in the spring.</p></div>")
    md = convert(f'<div id="wrap"><div id="page-body">{post}</div>{side}</div>')
    assert md.count("The upgrade went fine") == 16
    assert "volunteers" not in md and "read the rules" not in md


def test_summaries_inside_a_cards_link_are_not_the_pages_text():
    # Ghost's Casper wraps each card's title and excerpt in one link (a news site's guide
    # list, <a><p>summary</p></a>, prompted it): link text, however long, is a teaser
    story = "".join(f"<p>Paragraph {i} of the release notes, with the fixes, the changes, "
                    "and the thanks to everyone who reported a problem.</p>" for i in range(4))
    card = ('<article class="post-card"><a class="post-card-content-link" href="/p{0}/">'
            '<header class="post-card-header"><h2 class="post-card-title">Post {0}</h2>'
            '</header><section class="post-card-excerpt"><p>An excerpt of post {0}, about '
            "the weather, the garden, the cats, and the long evenings of the autumn.</p>"
            "</section></a></article>")
    cards = '<div class="post-feed">' + "".join(card.format(i) for i in range(6)) + "</div>"
    md = convert(f'<div class="site-content"><h1>Release 2.1</h1>{story}</div>'
                 f'<div class="read-next">{cards}</div>')
    assert md.count("of the release notes") == 4 and "An excerpt" not in md


def test_a_class_whose_last_word_is_a_widgets_names_that_widget():
    # WordPress themes: div.entry-meta (posted on, by) inside the article; "entry" names the
    # content, "meta" the box (WSJ's li.article-breadCrumb prompted it).  A box's own
    # header (Bootstrap's div.card-header > h5, BEM "article-boxout__header") is its title.
    text = "The garden was planted in April, and watered, weeded and harvested by hand. " * 3
    body = f"""<main><h1>Our garden</h1>
      <div class="entry-meta"><span class="posted-on">Posted on <a href="/2019/04/">April
      3, 2019</a></span> <span class="byline">by <a href="/author/ann/">Ann</a></span></div>
      <p>{text}</p><div class="card"><div class="card-header"><h5>What we grew</h5></div>
      <div class="card-body"><p>{text}</p></div></div></main>"""
    md = convert(body)
    assert "Posted on" not in md and "Ann" not in md
    assert "##### What we grew\n" in md and md.count("The garden was planted") == 6


def test_a_word_of_a_term_or_heading_is_not_a_widgets_text():
    # Sphinx documents a method named next(): the word alone matches a "Next" pager's text,
    # but it is a term's name, and the entry stays (rustdoc's "fn next" heading prompted it)
    body = """<main><h1>Reader</h1><p>The reader reads rows from the file, one at a time,
      until the end.</p><dl class="py method"><dt class="sig sig-object py" id="Reader.next">
      <span class="sig-name descname"><span class="pre">next</span></span><span
      class="sig-paren">(</span><span class="sig-paren">)</span></dt><dd><p>The next row.</p>
      </dd></dl><div class="footer-nav"><a href="/p/">Previous</a></div></main>"""
    md = convert(body)
    assert "**next()**\n\nThe next row.\n" in md and "Previous" not in md


def test_hover_text_inside_a_heading_is_left_out():
    # the CSS-only tooltip (span.tooltip > span.tooltiptext, shown on hover) in a title;
    # rustdoc's "Notable traits" box inside a method's h4 prompted it
    body = """<main><h2>Limits <span class="tooltip">&#9432;<span class="tooltiptext">Counted
      per account, reset at midnight UTC</span></span></h2><p>Each account may send 100
      requests an hour.</p></main>"""
    md = convert(body)
    assert md.startswith("## Limits\n\nEach account") and "midnight" not in md


def test_a_heading_holding_blocks_stays_one_heading():
    # a title in a <div> beside an anchor <div>, as component-based generators write them
    # (Erlang's docs, h3 > div.title-name beside div.title-anchors, prompted it): the heading
    # is still one line at its level
    body = """<main><h1>Quickstart</h1><h2 class="flex group" id="install">
      <div class="absolute"><a href="#install" aria-label="Navigate to header">&#8203;</a>
      </div><div class="heading-title">Install <code>the CLI</code></div></h2>
      <p>Run the installer once.</p></main>"""
    assert convert(body) == "# Quickstart\n\n## Install `the CLI`\n\nRun the installer once.\n"


def test_a_reference_page_is_all_its_sections_when_one_is_long():
    # DocBook XSL refentry as PostgreSQL's reference pages are built (gtk-doc's GLib pages
    # prompted it, the same markup): short Synopsis, Description and See Also sections
    # beside one long Parameters section, each opened by an empty <a name> target; the page
    # is every section, not the long one
    param = "<dt><code>name</code></dt><dd><p>" + "The name of the table to alter, which " \
        "may be schema-qualified, and must exist, or an error is raised. " * 3 + "</p></dd>"
    page = f"""<html><body><div class="navheader"><a href="p.html">Prev</a></div>
      <div class="refentry"><div class="refnamediv"><h2><span class="refentrytitle">ALTER
        TABLE</span></h2><p>ALTER TABLE — change the definition of a table</p></div>
      <div class="refsynopsisdiv"><a name="s1"></a><h2>Synopsis</h2>
        <pre class="synopsis">ALTER TABLE name RENAME TO new_name</pre></div>
      <div class="refsect1"><a name="s2"></a><h2>Description</h2><p>ALTER TABLE changes the
        definition of an existing table.</p></div>
      <div class="refsect1"><a name="s3"></a><h2>Parameters</h2><dl>{param * 12}</dl></div>
      <div class="refsect1"><a name="s4"></a><h2>See Also</h2><p>CREATE TABLE, DROP TABLE, ALTER
        INDEX, ALTER VIEW</p></div></div>
      <div class="navfooter"><a href="n.html">Next</a></div></body></html>"""
    md = html_to_markdown(page, URL).markdown
    for title in ("## Synopsis", "## Description", "## Parameters", "## See Also"):
        assert f"\n{title}\n" in md, title
    assert code_blocks(md) == ["ALTER TABLE name RENAME TO new_name\n"]


def test_a_news_pages_widget_labels_go_and_the_same_words_in_text_stay():
    # a Guardian-style story: "Advertisement" and "Share on Facebook" boxes, a "12 comments"
    # counter; the words in a sentence, a heading and a signature stay (a WordPress
    # "Share this on WhatsApp" button prompted it)
    story = "<p>" + "The council voted on the plan, and the vote was close, again. " * 4 + "</p>"
    body = f"""<article><h1>Vote</h1>{story}<div class="x"><span>Advert</span></div>
      <div class="bar"><a href="https://facebook.example/share">Share on Facebook</a></div>
      <p>Read the <a href="#c">comments</a> below.</p><div><span>12 comments</span></div>
      <div class="sig"><a href="#comment">comment</a><span>?: string</span></div>
      <h3>Comments</h3><p>None yet, and the thread is open for a week.</p></article>"""
    md = convert(body, head=ARTICLE)
    assert "Advert" not in md and "Share on" not in md and "12 comments" not in md
    assert "Read the [comments](" in md and "### Comments\n" in md
    assert "[comment](https://docs.example.com/guide/page/#comment)?: string" in md


def test_each_listed_posts_date_and_reading_time_stay_on_a_listing():
    # WordPress Twenty Twenty's blog index: each post's header holds its date in ul.post-meta;
    # on a listing that is each item's data, not a widget (MkDocs Material's blog index, with
    # "3 min read" per post, prompted it).  One story's own meta box is still a widget.
    card = """<article class="post-{0} post type-post status-publish hentry">
      <header class="entry-header has-text-align-center"><h2 class="entry-title">
      <a href="/p{0}/">Post {0}</a></h2><div class="post-meta-wrapper"><ul class="post-meta">
      <li class="post-date meta-wrapper"><a href="/p{0}/">January {0}, 2024</a></li>
      <li class="post-length meta-wrapper">3 min read</li></ul></div></header>
      <div class="post-inner thin"><div class="entry-content"><p>The excerpt of post {0},
      a sentence or two long.</p></div></div></article>"""
    cards = "".join(card.format(i) for i in range(1, 5))
    md = convert(f'<main id="site-content" role="main">{cards}</main>')
    assert md.count("3 min read") == 4 and "January 4, 2024" in md
    story = "<p>" + "The story itself, told in full sentences, with commas. " * 6 + "</p>"
    md = convert(f'<main><article><h1>A story</h1><div class="post-meta"><span>3 min read'
                 f"</span></div>{story}</article></main>")
    assert "min read" not in md and "The story itself" in md


def test_api_entries_without_main_keep_titles_and_signatures_and_drop_source_links():
    # Haddock: no <main>, so the density pick and its news rules judge the page.  Its block
    # titles are p.caption (no picture near), its signatures are link-dense (each type is a
    # link) but define a name (<a id class="def">), and each ends "Source #"
    sig = ('<p class="src"><a id="v:{0}" class="def">{0}</a> :: <a href="t.html#Bool">Bool'
           '</a> -&gt; <a href="t.html#Int">Int</a> -&gt; <a href="t.html#String">String</a>'
           ' <a href="src/M.html#{0}" class="link">Source</a> <a href="#v:{0}" '
           'class="selflink">#</a></p>')
    entry = ('<div class="top">' + sig + '<div class="doc"><p>The {0} function turns its '
             'flags and a count into text, and it says so at some length here.</p></div></div>')
    body = ('<div id="package-header"><span class="caption">pkg-1.0: a package</span>'
            '<ul class="links" id="page-menu"><li><a href="src/M.html">Source</a></li>'
            '<li><a href="index.html">Contents</a></li><li><a href="ix.html">Index</a></li>'
            '</ul></div><div id="content"><div id="description"><p class="caption">'
            'Description</p><div class="doc"><p>What the module is for, in a sentence.</p>'
            '</div></div><div id="interface"><h1>Documentation</h1>'
            + "".join(entry.format(n) for n in ("alpha", "beta", "gamma"))
            + '<div class="subs fields"><p class="caption">Fields</p><ul><li><dfn class="src">'
            '<a id="v:size" class="def">size</a> :: <a href="t.html#Int">Int</a></dfn></li>'
            '<li><dfn class="src"><a id="v:name" class="def">name</a> :: <a href="t.html#'
            'String">String</a></dfn></li><li><dfn class="src"><a id="v:flag" class="def">'
            'flag</a> :: <a href="t.html#Bool">Bool</a></dfn></li></ul></div>'
            # an instance's methods: signatures that link every type, under the entry's
            # own defining anchor, none of their own
            '<div class="top"><p class="src"><a id="t:Pos" class="def">Pos</a></p>'
            '<div class="subs instances"><details open><summary>Instance details</summary>'
            '<div class="subs methods"><p class="caption">Methods</p>'
            + "".join(f'<p class="src"><a href="#v:{m}">{m}</a> :: <a href="t.html#Int">Int'
                      f'</a> -&gt; <a href="#t:Pos">Pos</a> -&gt; <a href="t.html#ShowS">ShowS'
                      f'</a> <a href="src/M.html#{m}" class="link">Source</a></p>'
                      for m in ("showsPrec", "showList", "showAll"))
            + '</div></details></div></div></div></div>')
    md = convert(body)
    for name in ("alpha", "beta", "gamma"):
        assert f"{name} :: [Bool](" in md and f"The {name} function" in md, name
    assert "\nFields\n" in md and "size :: [Int](" in md
    assert "\nMethods\n" in md and md.count(" :: [Int](") == 4  # size and three methods
    assert "Source" not in md and "pkg-1.0" not in md and "Contents" not in md


def test_a_photo_caption_still_goes_on_a_news_page():
    # the caption rule above must not keep a photo's caption: a gallery's caption sits two
    # levels from its <img> (Gannett's div.image-meta > div.image-caption)
    story = "<p>" + "The council voted on the plan, and the vote was close, again. " * 4 + "</p>"
    body = f"""<article><h1>Vote</h1><div class="asset"><div><img src="/a.jpg"></div>
      <div class="meta-box"><div class="caption">Soccer ball on grass</div></div></div>
      {story}<div><p class="caption">Councillors after the vote</p><div><img src="/b.jpg">
      </div></div></article>"""
    md = convert(body, head=ARTICLE)
    assert "Soccer ball" not in md and "Councillors" not in md and "The council voted" in md


_OLD_SITE_HEADER = """<div class="nosearch"><a href="index.html"><img src="logo.gif" alt="Site"></a>
  <div class="tagline">Small. Fast. Reliable.<br>Choose any three.</div>
  <div class="menu mainmenu"><ul><li><a href="index.html">Home</a><li><a href="about.html">
  About</a><li><a href="docs.html">Documentation</a><li><a href="download.html">Download</a>
  <li><a href="support.html">Support</a><li><a href="license.html">License</a>
  <li><a href="purchase.html">Purchase</a><li><a href="news.html">News</a><li>
  <a href="forum.html">Forum</a><li><a href="changes.html">Release history</a></ul></div>
  <div class="menu submenu"><ul><li><a href="about.html">About</a><li><a href="docs.html">
  Documentation</a><li><a href="download.html">Download</a><li><a href="support.html">Support
  </a></ul></div><form action="search"><select name="s"><option>Search Documentation</option>
  <option>Search Changelog</option></select></form></div>"""


def test_an_index_page_without_prose_keeps_its_list_not_its_tagline():
    # the SQLite site's doclist.html: no paragraph anywhere, so the density pick had only the
    # header's tagline to go by and wrote it as the page
    items = "".join(f'<li><a href="p{i}.html">Document number {i} of the site</a></li>'
                    for i in range(40))
    md = convert(f"{_OLD_SITE_HEADER}<h2 align=center>All Documents</h2><ol>{items}</ol>")
    assert "## All Documents" in md and md.count("Document number") == 40
    assert "Choose any three" not in md and "Download" not in md


def test_a_section_index_in_a_short_main_beside_a_long_sidebar_keeps_its_list():
    # the demo theme's blog index (the bench sites serve it): <main> holds the h1, one line
    # and the list of posts, while the sidebar lists every page of the site.  The page says
    # where its content is, so the rule for pages without prose above must not take the
    # whole body, whose list of posts would then go as navigation
    from sitemap_crawler.demo import site as demosite

    site = demosite.generate(0, pages=20, seed=11, specials=False)
    page = next(p for p in site.pages if p.path == "/blog/index.html")
    html = site.render_page(page)
    md = html_to_markdown(html.decode() if isinstance(html, bytes) else html,
                          "http://127.0.0.1/blog/index.html").markdown
    posts = [p for p in site.pages if p.path.startswith("/blog/") and p.path != page.path]
    assert posts and "# Blog" in md
    assert all(f"/blog/{p.path.rsplit('/', 1)[1]})" in md for p in posts), md
    assert "Getting started" not in md  # the sidebar stays out


def test_a_page_written_straight_into_body_keeps_its_lists_beside_its_paragraphs():
    # the SQLite site's features.html: the h1, a list whose items are the text (no <p>), then
    # sections of paragraphs, all children of <body>; the pick took only the paragraphs
    feats = "".join(f'<li><a href="f{i}.html">Feature {i}</a> is described here in a line.</li>'
                    for i in range(8))
    uses = "".join(f"<li><p><b>Use {i}.</b> The engine is a popular choice for this, and it "
                   "works well, as many people have found, in practice.</p></li>"
                   for i in range(6))
    md = convert(f"{_OLD_SITE_HEADER}<h1 align=center>Features</h1><p><ul>{feats}</ul></p>"
                 f"<h2>Suggested uses</h2><p><ul>{uses}</ul></p>")
    assert "# Features\n" in md and md.count("is described here") == 8
    assert "## Suggested uses" in md and md.count("popular choice") == 6


def test_a_table_whose_second_column_is_empty_everywhere_keeps_its_first_row():
    # Haddock's constructors with no docs and Doxygen's "Related Pages" list: every row has
    # an empty cell beside its name, so the first row is a row, not the table's title
    haddock = ('<div class="subs constructors"><p class="caption">Constructors</p><table>'
               + "".join(f'<tr><td class="src"><a id="v:{c}" class="def">{c}</a> String</td>'
                         '<td class="doc empty">&nbsp;</td></tr>'
                         for c in ("Ident", "Other", "Cmd"))
               + "</table></div>")
    doxygen = ('<div class="directory"><table class="directory">'
               + "".join(f'<tr id="row_{i}_"><td class="entry"><a class="el" href="p{i}.html">'
                         f'Page {i}</a></td><td class="desc"></td></tr>' for i in range(4))
               + "</table></div>")
    md = convert(f"<main><h1>Module</h1><p>Its types.</p>{haddock}<h2>Pages</h2>{doxygen}</main>")
    assert "| Ident String | |\n| --- | --- |\n| Other String | |\n| Cmd String | |" in md
    assert "| [Page 0](" in md and "**[Page 0]" not in md and "**Ident" not in md
