"""Docs-generator markup survives conversion: checked by rendering the markdown back with a
CommonMark + GFM renderer, the way a reader (or GitHub) sees it.  The HTML snippets are the
shapes Docusaurus, Sphinx, MkDocs Material and Hugo emit (abridged, class names as shipped)."""

from __future__ import annotations

from lxml import etree
from markdown_it import MarkdownIt

from sitemap_crawler.convert.markdown import html_to_markdown

URL = "https://docs.example.com/guide/page/"
_md = MarkdownIt("commonmark").enable("table")


def convert(body: str, head: str = "") -> str:
    return html_to_markdown(f"<html><head>{head}</head><body>{body}</body></html>", URL).markdown


def rendered(md: str):
    return etree.fromstring(f"<div>{_md.render(md)}</div>", etree.HTMLParser()).find(".//div")


def code_blocks(md: str) -> list[str]:
    return ["".join(c.itertext()) for c in rendered(md).iter("code")
            if c.getparent().tag == "pre"]


DOCUSAURUS_CODE = (
    '<div class="language-yaml codeBlockContainer_Ckt0 theme-code-block">'
    '<div class="codeBlockContent_biex"><pre tabindex="0" class="prism-code language-yaml '
    'codeBlock_bY9V thin-scrollbar"><code class="codeBlockLines_e6Vv">'
    '<span class="token-line"><span class="token key atrule">site</span>'
    '<span class="token punctuation">:</span><span class="token plain"> docs</span><br></span>'
    '<span class="token-line"><span class="token plain" style="display:inline-block"></span>'
    "<br></span>"
    '<span class="token-line"><span class="token key atrule">retry</span>'
    '<span class="token punctuation">:</span><span class="token plain"> </span>'
    '<span class="token number">3</span><br></span></code></pre>'
    '<div class="buttonGroup__atx"><button type="button" aria-label="Copy code to clipboard" '
    'class="clean-btn">Copy</button></div></div></div>')


def test_docusaurus_code_lines_are_exact():
    md = convert(f"<main><article>{DOCUSAURUS_CODE}</article></main>")
    assert md == "```yaml\nsite: docs\n\nretry: 3\n```\n"


def test_per_line_divs_and_gutters_in_pre():
    shiki = ('<pre class="shiki"><code><div class="line"><span class="ln">1</span>'
             '<span>if x:</span></div>\n<div class="line"><span class="ln">2</span>'
             "<span>    go()</span></div></code></pre>")
    assert code_blocks(convert(f"<main>{shiki}</main>")) == ["if x:\n    go()\n"]
    chroma = ('<div class="highlight"><div class="chroma"><table class="lntable"><tr>'
              '<td class="lntd"><pre class="chroma"><code><span class="lnt">1\n</span>'
              '<span class="lnt">2\n</span></code></pre></td><td class="lntd">'
              '<pre class="chroma"><code class="language-go" data-lang="go">'
              '<span class="line"><span class="cl">a := 1\n</span></span>'
              '<span class="line"><span class="cl">b := 2\n</span></span></code></pre></td>'
              "</tr></table></div></div>")
    md = convert(f"<main>{chroma}</main>")
    assert md == "```go\na := 1\nb := 2\n```\n"


SPHINX_API = (
    '<dl class="py function">\n<dt class="sig sig-object py" id="pathlib.PurePath.joinpath">\n'
    '<span class="sig-name descname"><span class="pre">joinpath</span></span>'
    '<span class="sig-paren">(</span><em class="sig-param"><span class="n">'
    '<span class="pre">*</span>other</span></em><span class="sig-paren">)</span>'
    '<a class="headerlink" href="#pathlib.PurePath.joinpath" title="Link">¶</a></dt>\n'
    "<dd><p>Calling this method is equivalent to combining the path with each of the "
    "<em>other</em> arguments:</p>\n"
    '<div class="highlight-pycon notranslate"><div class="highlight"><pre><span></span>'
    '<span class="gp">&gt;&gt;&gt; </span><span class="n">PurePosixPath</span>'
    '<span class="p">(</span><span class="s1">\'/etc\'</span><span class="p">)</span>'
    '<span class="o">.</span><span class="n">joinpath</span><span class="p">(</span>'
    '<span class="s1">\'passwd\'</span><span class="p">)</span>\n'
    '<span class="go">PurePosixPath(\'/etc/passwd\')</span>\n</pre></div></div>\n'
    "<ul><li><p>first point</p></li><li><p>second point</p></li></ul>\n</dd></dl>")


def test_definition_lists_render_as_term_and_blocks_not_indented_code():
    md = convert(f'<div role="main">{SPHINX_API}</div>')
    root = rendered(md)
    assert root.find("p/strong") is not None
    assert "".join(root.find("p/strong").itertext()) == "joinpath(*other)"
    assert code_blocks(md) == [">>> PurePosixPath('/etc').joinpath('passwd')\n"
                               "PurePosixPath('/etc/passwd')\n"]
    assert [li.findtext("p") or li.text for li in root.iter("li")] == \
        ["first point", "second point"]
    assert "¶" not in md and "\n    " not in md


def test_admonitions_tabs_and_math():
    body = """<main><article>
    <div class="admonition warning"><p class="admonition-title">Warning</p>
      <p>Do not run this as root.</p></div>
    <div class="theme-admonition theme-admonition-tip alert alert--success admonition_xJq3">
      <div class="admonitionHeading_Gvgb"><span class="admonitionIcon_Rf37"><svg></svg>
      </span>tip</div>
      <div class="admonitionContent_BuS1"><p>Use a cache.</p></div></div>
    <div class="tabs-container"><ul role="tablist" class="tabs">
      <li role="tab" class="tabs__item tabs__item--active">npm</li>
      <li role="tab" class="tabs__item">Yarn</li></ul>
      <div class="margin-top--md"><div role="tabpanel"><p>npm install x</p></div>
      <div role="tabpanel" hidden><p>yarn add x</p></div></div></div>
    <p>Energy is <span class="math notranslate nohighlight">\\(E = m c^2\\)</span>, and
    <math><semantics><mi>x</mi><annotation encoding="application/x-tex">x_i^*</annotation>
    </semantics></math>.</p>
    </article></main>"""
    md = convert(body)
    root = rendered(md)
    quotes = root.findall("blockquote")
    assert ["".join(q.itertext()).split() for q in quotes] == [
        ["Warning", "Do", "not", "run", "this", "as", "root."], ["tip", "Use", "a", "cache."]]
    assert quotes[0].find("p/strong").text == "Warning"
    assert "**npm**\n\nnpm install x\n\n**Yarn**\n\nyarn add x" in md
    assert r"\(E = m c^2\)" in md and "$x_i^*$" in md


def test_tables_header_less_pipes_and_inline_code_render():
    table = ("<table><tr><td><code>a|b</code></td><td>x | y</td></tr>"
             "<tr><td>1</td><td>2</td></tr></table>")
    root = rendered(convert(f"<main>{table}</main>"))
    cells = [["".join(c.itertext()) for c in tr] for tr in root.iter("tr")]
    assert cells == [["a|b", "x | y"], ["1", "2"]]


def test_layout_table_cells_are_blocks():
    layout = ("<table><tr><td><h2>Title</h2><p>First para.</p><pre>code</pre></td>"
              "<td><p>Side.</p></td></tr></table>")
    md = convert(f"<main>{layout}</main>")
    assert md == "## Title\n\nFirst para.\n\n```\ncode\n```\n\nSide.\n"


def test_nested_lists_and_paragraph_lists_render_nested():
    html = ("<main><ol><li><p>one</p><ul><li>a<ul><li>deep</li></ul></li></ul></li>"
            "<li>two</li></ol></main>")
    root = rendered(convert(html))
    assert root.find("ol/li/ul/li/ul/li").text == "deep"
    assert root.find("ol").findall("li")[1].findtext("p") == "two"


def test_text_that_looks_like_markup_stays_text():
    html = ("<main><p>Use &lt;br&gt; tags, `ticks` and a * star.</p><p>1. not a list</p>"
            "<p># not a heading</p></main>")
    root = rendered(convert(html))
    assert [p.text for p in root.findall("p")] == [
        "Use <br> tags, `ticks` and a * star.", "1. not a list", "# not a heading"]


def test_article_inside_main_is_preferred_over_main():
    body = """<main class="docMainContainer"><div class="row">
      <div class="col docItemCol"><article><div class="markdown"><h1>Guide</h1>
        <p>The real text of the page, long enough to be the content of it.</p></div></article>
        <nav class="pagination-nav"><a href="/prev">Previous</a><a href="/next">Next</a></nav>
      </div>
      <div class="col col--3"><div class="tableOfContents_bqdL">
        <ul><li><a href="#a">Section A</a></li><li><a href="#b">Section B</a></li></ul>
      </div></div></div></main>"""
    p = html_to_markdown(f"<html><body>{body}</body></html>", URL)
    assert p.root == "main>article"
    assert p.markdown.startswith("# Guide\n") and "Section A" not in p.markdown


def test_widgets_inside_the_content_are_dropped():
    body = """<main><article>
      <span class="badge badge--secondary">Version: 3.5.2</span>
      <h1>Install</h1><p class="reading-time">8 min read</p>
      <div class="toc-inline"><ul><li><a href="#one">One</a></li><li><a href="#two">Two</a></li>
        <li><a href="#three">Three</a></li></ul></div>
      <h2 id="share">Share</h2><p>Share the cache between workers by pointing them at one
        directory on the network share.</p>
      <p>Body text that explains how to install the tool and what it needs first.</p>
      <div class="feedback"><p>Was this page helpful?</p><button>Yes</button></div>
      <div class="theme-last-updated">Last updated on <time>Jan 2, 2024</time></div>
      <div class="nav-links"><a rel="prev" href="/a">« Setup</a>
        <a rel="next" href="/b">Usage »</a></div>
    </article></main>"""
    md = convert(body)
    assert md == ("# Install\n\n## Share\n\nShare the cache between workers by pointing them "
                  "at one directory on the network share.\n\nBody text that explains how to "
                  "install the tool and what it needs first.\n")


def test_a_too_small_root_falls_back_to_a_wider_one_and_says_so():
    body = ("<main><p>Loading…</p></main><div class='story'><h1>Real story</h1>"
            + "<p>This paragraph is what the page is about, and it is long enough, "
              "with commas, to count.</p>" * 6 + "</div>")
    p = html_to_markdown(f"<html><body>{body}</body></html>", URL)
    assert p.root in ("density", "body")
    assert "# Real story" in p.markdown and p.text_chars > 400


def test_news_pages_drop_captions_and_bylines_docs_pages_keep_figures():
    article = """<main><article><h1>Storm hits the coast</h1>
      <div class="byline">By A. Writer, Staff</div>
      <figure><img src="/a.jpg" alt="Waves"><figcaption>Waves on Monday. Photo: AP</figcaption>
      </figure>
      <p>The storm reached the coast on Monday night, and the harbour was closed.</p>
      <div class="gallery"><p>Image 1 of 8</p><p>Boats in the harbour.</p></div>
      </article></main>"""
    news = convert(article, head='<meta property="og:type" content="article">')
    assert news == ("# Storm hits the coast\n\nThe storm reached the coast on Monday night, "
                    "and the harbour was closed.\n")
    docs = convert(article)
    assert "![Waves](https://docs.example.com/a.jpg)" in docs
    assert "Waves on Monday" in docs


def test_code_tokens_named_like_boilerplate_stay():
    prism = ('<pre class="prism-code language-python"><code>'
             '<span class="token-line"><span class="token plain">x = 1  </span>'
             '<span class="token comment"># share &amp; print</span><br></span>'
             '<span class="token-line"><span class="token tags">print</span>(x)<br></span>'
             "</code></pre>")
    assert code_blocks(convert(f"<main><article>{prism}</article></main>")) == \
        ["x = 1  # share & print\nprint(x)\n"]


def test_mathjax2_script_tex_is_kept_other_scripts_are_not():
    body = ('<main><p>Area <script type="math/tex">\\pi r^2</script>, and</p>'
            '<script type="math/tex; mode=display">\\sum_i x_i</script>'
            "<script>track('x')</script></main>")
    assert convert(body) == "Area $\\pi r^2$, and\n\n$$\n\\sum_i x_i\n$$\n"


def test_one_story_beside_an_article_of_teasers_is_the_page():
    story = "<p>" + "The story itself, told in full sentences, with details. " * 12 + "</p>"
    teaser = "<article><h3>Other story</h3><p>" + "A teaser of another story. " * 8 \
        + "</p></article>"
    body = f"<article><h1>Story</h1>{story}</article><article>{teaser * 4}</article>"
    p = html_to_markdown(f"<html><body>{body}</body></html>", URL)
    assert p.root == "article"
    assert p.markdown.startswith("# Story\n") and "Other story" not in p.markdown
