"""fetch.charset reads its labels from webencodings (the WHATWG table): the labels the old
hand-written table knew still mean what they meant, and the table's codec choices where the
Standard's decoder is wider than Python's codec of the same name still hold."""

from __future__ import annotations

import pytest

from sitemap_crawler.fetch.charset import decode_html, lookup, prescan_meta


@pytest.mark.parametrize(("label", "name"), [
    ("ks_c_5601-1987", "euc-kr"),
    ("x-cp1251", "windows-1251"),
    ("\tSJIS ", "shift_jis"),
    ("visual", "iso-8859-8"),
    ("logical", "iso-8859-8-i"),
    ("x-mac-ukrainian", "x-mac-cyrillic"),
    ("unicodefffe", "utf-16be"),
])
def test_labels_the_old_table_had(label: str, name: str) -> None:
    assert lookup(label) == name


def test_wider_decoders_than_python_codecs_of_the_same_name() -> None:
    # gbk is decoded with gb18030 (four-byte sequences), shift_jis with cp932 (NEC row 13),
    # euc-kr with cp949 (UHC), big5 with big5-hkscs.
    for text, label, codec in [("😀", "gbk", "gb18030"), ("①", "shift_jis", "cp932"),
                               ("똠", "euc-kr", "cp949"), ("𠄌", "big5", "big5hkscs")]:
        body = f"<p>{text}</p>".encode(codec)
        assert decode_html(body, f"text/html; charset={label}") == (f"<p>{text}</p>", label)


def test_x_user_defined_the_old_table_lacked() -> None:
    # From the header it is the x-user-defined decoder (0x80-0xFF to U+F780-U+F7FF); from a
    # meta it means windows-1252, as the HTML Standard's prescan says.
    assert lookup("x-user-defined") == "x-user-defined"
    assert decode_html(b"a\x80\xff", "text/html; charset=x-user-defined") == (
        "a\uf780\uf7ff", "x-user-defined")
    meta = b'<meta charset="x-user-defined">'
    assert prescan_meta(meta) == "windows-1252"
    assert decode_html(meta + b"\x80", None) == (meta.decode() + "€", "windows-1252")


def test_replacement_labels_are_ignored_as_before() -> None:
    # The Standard turns such a page into one U+FFFD; the crawler sniffs it as unlabelled.
    for label in ("iso-2022-kr", "hz-gb-2312", "iso-2022-cn", "replacement"):
        assert lookup(label) is None
        assert decode_html("é".encode(), f"text/html; charset={label}") == ("é", "utf-8")
