"""HTML → markdown, front matter and charset decoding, on real HTML documents."""

from __future__ import annotations

import codecs
from datetime import UTC, datetime

import httpx
import pytest
import yaml
from httpserver import Response
from markdown_it import MarkdownIt

from sitemap_crawler.convert.markdown import (
    Page,
    _tidy,
    html_to_markdown,
    normalized_hash,
    parse_robots_directives,
    render_document,
    text_document,
)
from sitemap_crawler.fetch.charset import decode_html, lookup, prescan_meta

URL = "https://docs.example.com/guide/install/"


def doc_page(article: str, *, nav: str = "", footer: str = "", head: str = "",
             wrapper: str = "main") -> str:
    """A documentation page as sites ship them: header, nav, sidebar, content, footer."""
    nav = nav or "".join(f'<li><a href="/guide/p{i}/">Page {i}</a></li>' for i in range(20))
    footer = footer or "<p>© 2024 Example Inc. Rendered at 12:00:01.</p>"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Install - Example Docs</title>
  <meta name="description" content="How to install Example.">
  <link rel="stylesheet" href="/static/site.css">
  <script>var analytics = "tracking";</script>
  {head}
</head>
<body>
  <header class="top"><a href="/" class="logo">Example Docs</a>
    <form action="/search"><input name="q" placeholder="Search docs"></form></header>
  <nav class="sidebar" aria-label="Main"><ul>{nav}</ul></nav>
  <{wrapper}>
{article}
  </{wrapper}>
  <aside class="toc"><a href="#intro">On this page</a></aside>
  <footer>{footer}</footer>
  <script src="/static/app.js"></script>
</body>
</html>"""


ARTICLE = """
<h1 id="install">Installing Example<a class="headerlink" href="#install" title="Link">¶</a></h1>
<p>Example needs <strong>Python 3.11</strong> and a <a href="../requirements/">few libraries</a>.
   Read the <a href="https://other.example.org/faq#top">FAQ</a> first.</p>
<h2 id="pip">With pip</h2>
<div class="highlight-bash notranslate"><div class="highlight">
<pre><span></span>pip install example_pkg
example --init *.toml
</pre></div></div>
<h3>Options</h3>
<table>
  <thead><tr><th>Option</th><th>Meaning</th></tr></thead>
  <tbody>
    <tr><td><code>--fast</code></td><td>skip checks | unsafe</td></tr>
    <tr><td><code>--dir</code></td><td>target directory</td></tr>
  </tbody>
</table>
<ul>
  <li>First item</li>
  <li>Second item
    <ul><li>Nested item</li></ul>
  </li>
</ul>
<ol start="3"><li>three</li><li>four</li></ol>
<p><img src="img/diagram.png" alt="Diagram"></p>
"""


def page(html: str, url: str = URL, **kw) -> Page:
    return html_to_markdown(html, url, **kw)


# --- main content ----------------------------------------------------------------------------


def test_main_element_is_the_content_and_boilerplate_is_gone():
    md = page(doc_page(ARTICLE)).markdown
    assert md.startswith("# Installing Example\n")
    assert "## With pip" in md and "### Options" in md
    for junk in ("Page 7", "Search docs", "On this page", "Rendered at", "analytics",
                 "Example Docs", "¶"):
        assert junk not in md, junk


@pytest.mark.parametrize("open_tag,close_tag", [
    ("<article>", "</article>"),
    ('<div role="main">', "</div>"),
])
def test_article_and_role_main_are_used_without_main(open_tag, close_tag):
    html = doc_page(f'{open_tag}{ARTICLE}{close_tag}', wrapper="div")
    md = page(html).markdown
    assert md.startswith("# Installing Example\n")
    assert "Page 7" not in md and "Rendered at" not in md


def test_body_fallback_drops_header_nav_aside_footer():
    html = doc_page(ARTICLE, wrapper="div")
    md = page(html).markdown
    assert "# Installing Example" in md and "pip install example_pkg" in md
    for junk in ("Page 7", "Search docs", "On this page", "Rendered at", "Example Docs"):
        assert junk not in md, junk


def test_main_is_preferred_over_article_and_hidden_main_is_skipped():
    html = ("<html><body><main hidden><p>old layout</p></main>"
            "<div><article><p>teaser one</p></article><main><p>the real one</p></main>"
            "</div></body></html>")
    md = page(html).markdown
    assert md == "the real one\n"


def test_several_articles_keep_them_all():
    html = ("<html><body><nav><a href='/x'>menu</a></nav>"
            "<article><h2>Post one</h2></article><article><h2>Post two</h2></article>"
            "</body></html>")
    md = page(html).markdown
    assert "## Post one" in md and "## Post two" in md and "menu" not in md


def test_noise_inside_main_is_removed():
    article = """
    <h1>Title</h1>
    <p>Keep this.</p>
    <script>alert("no")</script><style>p{color:red}</style><noscript>enable js</noscript>
    <form><label>Rate this page</label><button>Yes</button></form>
    <button class="copy">Copy</button>
    <svg><text>svg text</text></svg>
    <div hidden>hidden div</div><span aria-hidden="true">decorative</span>
    <div style="display: none">invisible</div>
    <nav class="pagination"><a href="/prev/">Previous page</a></nav>
    <template><p>template</p></template>
    <iframe src="/ad"></iframe>
    <p>Keep this too.</p>
    """
    md = page(doc_page(article)).markdown
    assert md == "# Title\n\nKeep this.\n\nKeep this too.\n"


# --- markdown shape --------------------------------------------------------------------------


def test_headings_lists_and_paragraphs():
    md = page(doc_page(ARTICLE)).markdown
    assert "- First item\n- Second item\n  - Nested item\n" in md
    assert "3. three\n4. four\n" in md
    assert "\n\n\n" not in md
    assert all(line == line.rstrip() for line in md.splitlines())


@pytest.mark.parametrize("block,lang", [
    ('<pre><code class="language-python">x_y = 1</code></pre>', "python"),
    ('<pre class="lang-js"><code>x_y = 1</code></pre>', "js"),
    ('<div class="highlight-rust notranslate"><div class="highlight"><pre>x_y = 1</pre>'
     "</div></div>", "rust"),
    ('<pre><code data-lang="go">x_y = 1</code></pre>', "go"),
    ('<div class="language-yaml highlight"><pre><span></span><code>x_y = 1</code></pre></div>',
     "yaml"),
    ('<pre><code class="hljs language-c++">x_y = 1</code></pre>', "c++"),
    ('<pre class="sourceCode haskell"><code class="sourceCode haskell">x_y = 1</code></pre>',
     "haskell"),
    ('<pre class="brush: php; gutter: false">x_y = 1</pre>', "php"),
    ('<div class="highlight-default notranslate"><pre>x_y = 1</pre></div>', ""),
    ('<pre class="language"><code class="highlight">x_y = 1</code></pre>', ""),
    ("<pre>x_y = 1</pre>", ""),
])
def test_code_fences_carry_the_language(block, lang):
    md = page(doc_page(block)).markdown
    assert md == f"```{lang}\nx_y = 1\n```\n"


def test_code_is_not_escaped_and_keeps_its_layout():
    md = page(doc_page(ARTICLE)).markdown
    assert "```bash\npip install example_pkg\nexample --init *.toml\n```" in md
    code = ('<pre><code class="language-python">def f(a_b, *args):\n\n\n'
            '    return a_b  # &lt;ok&gt;   \n</code></pre>')
    md = page(doc_page(code)).markdown
    # blank lines inside code are kept, trailing spaces are stripped
    assert md == "```python\ndef f(a_b, *args):\n\n\n    return a_b  # <ok>\n```\n"


def test_line_numbers_are_not_code():
    table = ('<div class="highlight-python notranslate"><div class="highlight">'
             '<table class="highlighttable"><tr><td class="linenos"><div class="linenodiv">'
             "<pre>1\n2</pre></div></td><td class=\"code\"><div class=\"highlight\">"
             "<pre>a = 1\nb = 2</pre></div></td></tr></table></div></div>")
    assert page(doc_page(table)).markdown == "```python\na = 1\nb = 2\n```\n"
    spans = ('<pre><code class="language-py"><span class="linenos">1</span>a = 1\n'
             '<span class="linenos">2</span>b = 2</code></pre>')
    assert page(doc_page(spans)).markdown == "```py\na = 1\nb = 2\n```\n"


def test_code_containing_a_fence_gets_a_longer_fence():
    md = page(doc_page("<pre><code>Use ```python\nblocks```</code></pre>")).markdown
    assert md.startswith("````\nUse ```python") and md.endswith("\n````\n")


def test_code_language_default_applies_only_without_a_language():
    html = doc_page('<pre>plain</pre><pre><code class="language-sh">ls</code></pre>')
    md = page(html, code_language_default="text").markdown
    assert "```text\nplain\n```" in md and "```sh\nls\n```" in md


def test_inline_code_and_emphasis_escaping():
    html = doc_page("<p>Call <code>get_value(*a)</code> on snake_case names, not _this_ "
                    "or *that*.</p>")
    md = page(html).markdown
    assert md == r"Call `get_value(*a)` on snake_case names, not \_this\_ or \*that\*." + "\n"


def test_tables_with_header_row():
    md = page(doc_page(ARTICLE)).markdown
    assert ("| Option | Meaning |\n| --- | --- |\n| `--fast` | skip checks \\| unsafe |\n"
            "| `--dir` | target directory |\n") in md


def test_table_without_th_uses_first_row_as_header():
    html = doc_page("<table><tr><td>Name</td><td>Value</td></tr>"
                    "<tr><td>a</td><td>1</td></tr><tr><td colspan='2'>wide</td></tr></table>")
    md = page(html).markdown
    assert md == "| Name | Value |\n| --- | --- |\n| a | 1 |\n| wide | |\n"


def test_table_rows_come_header_first_then_in_the_order_of_the_html():
    """thead rows lead wherever the HTML puts them; then the table's own rows, then those of
    its tbody and tfoot groups (the order the renderer's one pass over the rows keeps)."""
    html = doc_page("<table><tbody><tr><td>b1</td><td>1</td></tr></tbody>"
                    "<tr><td>own</td><td>2</td></tr>"
                    "<tfoot><tr><td>f1</td><td>3</td></tr></tfoot>"
                    "<thead><tr><th>Name</th><th>N</th></tr></thead>"
                    "<tbody><tr><td>b2</td><td>4</td></tr></tbody></table>")
    md = page(html).markdown
    assert md == ("| Name | N |\n| --- | --- |\n| own | 2 |\n| b1 | 1 |\n| f1 | 3 |\n"
                  "| b2 | 4 |\n")


def test_tidy_keeps_a_tilde_fence_as_it_is_and_drops_control_characters():
    """Blank lines collapse outside code only: also in a ~~~ block (a paragraph may open one),
    and C0 controls go wherever they are."""
    md = "~~~\nx  \n\n\n\ny\n~~~\n\n\n\nz\x01\x7f  \n\n"
    assert _tidy(md) == "~~~\nx\n\n\n\ny\n~~~\n\nz\n"
    assert _tidy("a\x00\n\n\n```\n\n\nb\n```\n\x1f") == "a\n\n```\n\n\nb\n```\n"


def test_links_and_images_are_absolute_and_use_base_href():
    md = page(doc_page(ARTICLE)).markdown
    assert "[few libraries](https://docs.example.com/guide/requirements/)" in md
    assert "[FAQ](https://other.example.org/faq#top)" in md
    assert "![Diagram](https://docs.example.com/guide/install/img/diagram.png)" in md
    html = doc_page('<p><a href="x/y.html">rel</a> <img src="/i.png" alt="I"></p>',
                    head='<base href="https://cdn.example.net/v2/">')
    md = page(html).markdown
    assert md == ("[rel](https://cdn.example.net/v2/x/y.html) "
                  "![I](https://cdn.example.net/i.png)\n")


def test_odd_links_are_made_harmless():
    html = doc_page(
        '<p><a href="javascript:alert(1)">click</a> <a href="#sec">in page</a> '
        '<a href="/a b(c)">spaced</a> <a href="mailto:x@example.com">mail</a> '
        '<a href="/empty"></a> <a id="anchor-only"></a>'
        '<img data-src="/lazy.png" src="data:image/gif;base64,R0lGOD" alt="lazy"></p>')
    md = page(html).markdown
    assert "javascript" not in md and "click" in md
    assert "[in page](https://docs.example.com/guide/install/#sec)" in md
    assert "[spaced](<https://docs.example.com/a b(c)>)" in md
    assert "[mail](mailto:x@example.com)" in md
    assert "![lazy](https://docs.example.com/lazy.png)" in md
    assert "/empty" not in md


def test_links_list_is_main_content_only_absolute_and_deduped():
    html = doc_page(
        '<p><a href="/a/#one">a</a> <a href="/a/#two">again</a> <a href="b">b</a>'
        ' <a href="#local">local</a> <a href="mailto:x@y.z">m</a>'
        ' <a href="ftp://files.example.com/">ftp</a> <a href="HTTPS://Other.example/">o</a>'
        "</p>")
    links = page(html).links
    assert links == ["https://docs.example.com/a/", "https://docs.example.com/guide/install/b",
                     "https://other.example/"]


def test_permalink_markers_are_dropped():
    html = doc_page('<h2 id="x">Usage<a class="hash-link" href="#x">#</a></h2>'
                    '<h2 id="y"><a href="#y" aria-label="Permalink">🔗</a> Setup</h2>'
                    '<h2 id="z">Tail<a class="header-anchor" href="#z">\u200b</a></h2>')
    md = page(html).markdown
    assert md == "## Usage\n\n## Setup\n\n## Tail\n"


# --- metadata --------------------------------------------------------------------------------


def test_metadata():
    head = ('<link rel="canonical" href="/guide/install/">'
            '<meta name="robots" content="NOINDEX">')
    p = page(doc_page(ARTICLE, head=head))
    assert p.title == "Install - Example Docs"
    assert p.description == "How to install Example."
    assert p.lang == "en"
    assert p.canonical == "https://docs.example.com/guide/install/"
    assert (p.noindex, p.nofollow) == (True, False)
    assert 150 < p.text_chars < len(p.markdown)


def test_title_falls_back_to_og_title_then_h1():
    og = ('<html><head><meta property="og:title" content="OG title"></head>'
          "<body><main><h1>Heading</h1></main></body></html>")
    assert page(og).title == "OG title"
    h1 = "<html><body><main><h1>  The\n  Heading </h1><p>x</p></main></body></html>"
    assert page(h1).title == "The Heading"
    svg = ("<html><body><svg><title>icon</title></svg><main><h1>Real</h1></main>"
           "</body></html>")
    assert page(svg).title == "Real"


@pytest.mark.parametrize("value,expected", [
    (None, (False, False)),
    ("", (False, False)),
    ("index, follow", (False, False)),
    ("noindex", (True, False)),
    ("NoFollow", (False, True)),
    ("none", (True, True)),
    ("noindex, nofollow", (True, True)),
    ("googlebot: noindex", (False, False)),
    ("sitemap-crawler: noindex", (True, False)),
    ("googlebot: noindex, nofollow, sitemap-crawler: nofollow", (False, True)),
    ("unavailable_after: 25 Jun 2010 15:00:00 PST, noindex", (True, False)),
    ("max-snippet: 20, nofollow", (False, True)),
])
def test_parse_robots_directives(value, expected):
    assert parse_robots_directives(value) == expected


def test_meta_robots_none_and_nofollow():
    html = doc_page("<p>x</p>", head='<meta name="robots" content="none">')
    p = page(html)
    assert p.noindex and p.nofollow


# --- content hash ----------------------------------------------------------------------------


def test_content_hash_ignores_footer_clock_and_nav_but_sees_article_edits():
    base = page(doc_page(ARTICLE)).content_hash
    later = doc_page(ARTICLE, footer="<p>© 2024 Example Inc. Rendered at 23:59:59.</p>")
    assert page(later).content_hash == base
    new_nav = doc_page(ARTICLE, nav='<li><a href="/new/">A brand new section</a></li>')
    assert page(new_nav).content_hash == base
    reflowed = doc_page(ARTICLE.replace("first.</p>", "\n\n   first.</p>"))
    assert page(reflowed).content_hash == base
    edited = doc_page(ARTICLE.replace("few libraries", "several libraries"))
    assert page(edited).content_hash != base
    assert base.startswith("sha256:") and len(base) == 7 + 64


def test_normalized_hash():
    assert normalized_hash("a  b\n\nc") == normalized_hash("a b c")
    assert normalized_hash("a b") != normalized_hash("a c")


# --- robustness ------------------------------------------------------------------------------


@pytest.mark.parametrize("html", ["", "   ", "just text", "<p>\x00\x01</p>",
                                  '<?xml version="1.0" encoding="utf-8"?><html><body><p>x</p>'
                                  "</body></html>",
                                  "<html><body><main>" + "<div>" * 3000 + "deep"
                                  + "</div>" * 3000 + "</main></body></html>"])
def test_odd_documents_do_not_crash(html):
    p = page(html)
    assert isinstance(p.markdown, str)
    assert "\x00" not in p.markdown and "\x01" not in p.markdown


def test_xml_declared_xhtml_converts():
    html = ('<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
            "<head><title>X</title></head><body><main><p>hello</p></main></body></html>")
    p = page(html)
    assert (p.title, p.markdown) == ("X", "hello\n")


GNARLY = """<main>
<p>Some <b>bold</b>, <i> spaced italics </i>and<em>tight</em> text
   over   lines.<br>After a break.</p>
<blockquote><p>Quoted <a href="/q">link</a></p><p>second</p></blockquote>
<ul><li><p>para in li</p><pre>code in li</pre></li><li>plain <code>c</code></li></ul>
<dl><dt>Term</dt><dd>Definition <kbd>Ctrl</kbd>+<kbd>C</kbd></dd></dl>
<div>  <span> inline </span>  <div>nested block</div> tail </div>
<table><caption>Cap</caption><thead><tr><th>a</th><th>b</th></tr></thead>
<tbody><tr><td><p>cell p</p></td><td>x<br>y</td></tr></tbody></table>
<pre>
  indented
	tabbed
</pre>
<h4>Heading <code>with code</code> and <a href="/h">link</a></h4>
<p>Text with 1. number and - dash and # hash</p><hr><p>end</p>
</main>"""


def test_gnarly_markup_renders_as_its_structure():
    """Rendered back with a CommonMark + GFM renderer, the markdown has the page's structure."""
    md = page(GNARLY).markdown
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<p>Some <strong>bold</strong>, <em>spaced italics</em> and<em>tight</em> text " \
        "over lines.<br />\nAfter a break.</p>" in html
    assert '<blockquote>\n<p>Quoted <a href="https://docs.example.com/q">link</a></p>\n' \
        "<p>second</p>\n</blockquote>" in html
    assert "<pre><code>code in li\n</code></pre>" in html
    assert "<p><strong>Term</strong></p>\n<p>Definition <code>Ctrl</code>+<code>C</code></p>" \
        in html
    assert "<td>cell p</td>\n<td>x<br>y</td>" in html
    assert "<pre><code>  indented\n\ttabbed\n</code></pre>" in html
    assert "<h4>Heading <code>with code</code> and " in html
    assert "<p>Text with 1. number and - dash and # hash</p>\n<hr />\n<p>end</p>" in html
    assert "<p>inline</p>\n<p>nested block</p>\n<p>tail</p>" in html


# --- documents -------------------------------------------------------------------------------

NASTY_TITLES = [
    "Plain title",
    "Key: value pairs: everywhere",
    'He said "hi" and \'bye\'',
    "Line one\nLine two\n",
    "- looks like a list",
    "# looks like a comment",
    "{not: a mapping}",
    "[not, a, list]",
    "yes",
    "null",
    "123",
    "2024-01-01",
    "---",
    "a\n---\nb",
    "tab\there",
    "bell\x07 and escape\x1b",
    "line\u2028separator and \u0085 next line",
    "\ufeffBOM and \uffff non-character",
    "émoji 🚀 and 中文",
    "trailing space ",
    " leading space",
    "@at `backtick` %percent &amp *star !bang |pipe >gt",
    "",
]


def split_document(text: str) -> tuple[dict, str]:
    assert text.startswith("---\n")
    end = text.index("\n---\n", 3)
    return yaml.safe_load(text[4:end]), text[end + 5:]


@pytest.mark.parametrize("title", NASTY_TITLES)
def test_front_matter_round_trips_nasty_titles(title, tmp_path):
    p = page(doc_page(ARTICLE))
    p.title = title
    p.description = title + " (description)"
    text = render_document(p, url=URL, final_url=URL, status=200,
                           fetched_at=datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
                           extra={"etag": '"abc:1"', "site": "docs"})
    f = tmp_path / "page.md"
    f.write_text(text, encoding="utf-8")
    meta, body = split_document(f.read_text(encoding="utf-8"))
    # readers that look for the first "\n---" (index rebuild) find the real end too
    assert text.index("\n---") == text.index("\n---\n", 3)
    assert text.splitlines()[1] == f"url: {URL}"
    assert meta["title"] == title
    assert meta["description"] == title + " (description)"
    assert meta["url"] == URL and "final_url" not in meta
    assert meta["status"] == 200 and meta["fetched_at"] == "2024-05-06T07:08:09Z"
    assert meta["content_hash"] == p.content_hash and meta["lang"] == "en"
    assert meta["etag"] == '"abc:1"' and meta["site"] == "docs"
    assert body == "\n" + p.markdown


def test_front_matter_records_redirects_and_refuses_overriding_keys():
    p = page(doc_page(ARTICLE))
    text = render_document(p, url=URL, final_url=URL + "v2/", status=200,
                           fetched_at="2024-05-06T07:08:09Z", extra={})
    meta, _ = split_document(text)
    assert meta["final_url"] == URL + "v2/"
    assert list(meta)[:3] == ["url", "final_url", "title"]
    with pytest.raises(ValueError, match="title"):
        render_document(p, url=URL, final_url=None, status=200, fetched_at="x",
                        extra={"title": "mine"})
    assert render_document(p, url=URL, final_url=None, status=200, fetched_at="x", extra={},
                           front_matter_enabled=False) == p.markdown


def test_text_document_keeps_the_body_unchanged():
    body = "# llms.txt title\n\n> summary: yes\n\n- [Doc](https://x.example/doc.md)  \n"
    text = text_document(body, url="https://x.example/llms.txt", final_url=None, status=200,
                         fetched_at="2024-01-01T00:00:00Z", extra={"content_type": "text/plain"})
    meta, rest = split_document(text)
    assert rest == "\n" + body
    assert meta["title"] == "llms.txt title"
    assert meta["content_type"] == "text/plain"
    assert meta["content_hash"] == normalized_hash(body)
    plain = text_document("first line\nsecond", url="u", final_url=None, status=200,
                          fetched_at="t", extra=None)
    assert split_document(plain)[0]["title"] == "first line"


# --- charset ---------------------------------------------------------------------------------

CAFE_1252 = "<p>Café – 20 €</p>".encode("cp1252")


@pytest.mark.parametrize("body,header,text,encoding", [
    (codecs.BOM_UTF8 + "<p>Café</p>".encode(), "text/html; charset=iso-8859-1",
     "<p>Café</p>", "utf-8"),
    (codecs.BOM_UTF16_LE + "<p>Café</p>".encode("utf-16-le"), None, "<p>Café</p>",
     "utf-16le"),
    (codecs.BOM_UTF16_BE + "<p>Café</p>".encode("utf-16-be"), None, "<p>Café</p>",
     "utf-16be"),
    (CAFE_1252, 'text/html; charset="ISO-8859-1"', "<p>Café – 20 €</p>", "windows-1252"),
    (CAFE_1252, "text/html; charset=latin1", "<p>Café – 20 €</p>", "windows-1252"),
    (CAFE_1252, "text/html; charset=us-ascii", "<p>Café – 20 €</p>", "windows-1252"),
    ("<p>Привет</p>".encode("koi8-r"), "text/html; charset=KOI8-R", "<p>Привет</p>", "koi8-r"),
    ("<p>日本</p>".encode("cp932"), "text/html;charset=Shift_JIS", "<p>日本</p>", "shift_jis"),
    (CAFE_1252, None, "<p>Café – 20 €</p>", "windows-1252"),  # not UTF-8 → 1252
    ("<p>Café</p>".encode(), None, "<p>Café</p>", "utf-8"),
    ("<p>Café</p>".encode(), "text/html", "<p>Café</p>", "utf-8"),
    ("<p>Café</p>".encode(), "text/html; charset=bogus-label", "<p>Café</p>", "utf-8"),
])
def test_decode_html(body, header, text, encoding):
    assert decode_html(body, header) == (text, encoding)


def test_meta_charset_prescan():
    meta = b'<html><head><meta charset="iso-8859-15"><title>x</title>'
    text, enc = decode_html(meta + "€".encode("iso8859-15"), None)
    assert enc == "iso-8859-15" and text.endswith("€")
    http_equiv = (b"<!DOCTYPE html><html><head><!-- <meta charset=koi8-r> -->"
                  b"<META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=windows-1251'>")
    text, enc = decode_html(http_equiv + "Ж".encode("cp1251"), None)
    assert enc == "windows-1251" and text.endswith("Ж")
    # the header wins over the meta
    assert decode_html(meta + "é".encode(), "text/html; charset=utf-8")[1] == "utf-8"
    # a meta that claims UTF-16 is read as UTF-8; a meta after 1024 bytes is not seen
    assert prescan_meta(b'<meta charset="utf-16">') == "utf-8"
    late = b"<html><head>" + b" " * 1100 + b'<meta charset="koi8-r">'
    assert decode_html(late + "é".encode(), None)[1] == "utf-8"
    assert prescan_meta(b"<meta charset=utf-8/>") == "utf-8"
    assert prescan_meta(b'<meta name="x" content="charset=koi8-r">') is None


def test_bad_bytes_never_raise():
    text, enc = decode_html(b"<p>ok \xff\xfe\xc3</p>", "text/html; charset=utf-8")
    assert enc == "utf-8" and "\ufffd" in text and text.startswith("<p>ok ")
    assert lookup(" Latin1 ") == "windows-1252" and lookup("nope") is None


def test_fetched_cp1252_page_converts(server):
    """A real response whose header lies in the common way (latin1 means windows-1252)."""
    html = ("<html><head><title>Caf\xe9</title></head><body><main><h1>Prix \u20ac</h1>"
            "<p>\u201cQuoted\u201d na\xefve</p></main></body></html>")
    server.route("/p", Response(body=html.encode("cp1252"),
                                content_type="text/html; charset=ISO-8859-1"))
    r = httpx.get(server.url("/p"))
    text, enc = decode_html(r.content, r.headers.get("content-type"))
    p = html_to_markdown(text, server.url("/p"))
    assert enc == "windows-1252"
    assert p.title == "Café"
    assert p.markdown == "# Prix €\n\n\u201cQuoted\u201d naïve\n"
