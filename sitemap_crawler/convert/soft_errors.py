"""Pages that answer 200 but are not the page: bot challenges and error pages.

A CDN's "Just a moment..." interstitial, a captcha wall or a "500 Internal Server Error"
page served with status 200 must never replace a good markdown file: the worker keeps the
file it has, records the reason and retries the URL later (``resume``).  The signals are
the title and the first heading of a *short* page: a real article about HTTP 500 errors is
long, a challenge page is not.

May import nothing of the package: a pure function of the converted page.
"""

from __future__ import annotations

import re

# Titles of interstitials served with 200 by the common bot-protection layers.
_CHALLENGE = re.compile(
    r"^(just a moment\.*|attention required!?.*|please wait\.*|checking your browser.*|"
    r"ddos-guard|access denied|are you a robot\??|verify(ing)? you are (a )?human.*|"
    r"security check|captcha|one more step|pardon our interruption)$",
    re.I,
)
# An error page's title or heading: "500 Internal Server Error", "Error 503", "Bad Gateway".
_ERROR = re.compile(
    r"^((error\s*)?(5\d\d)\b.*|(internal server error|service unavailable|bad gateway|"
    r"gateway time-?out|server error|site maintenance|temporarily unavailable)\b.*)$",
    re.I,
)
# Longer than this, a page is content even if its title says "Access denied".
MAX_SOFT_ERROR_CHARS = 1500


def soft_error(title: str, markdown: str, text_chars: int) -> str | None:
    """``"challenge"`` or ``"error_page"`` when a 200 page is one of those, else None."""
    if text_chars > MAX_SOFT_ERROR_CHARS:
        return None
    heading = _first_heading(markdown)
    for text in (title.strip(), heading):
        if not text:
            continue
        if _CHALLENGE.match(text):
            return "challenge"
        if _ERROR.match(text):
            return "error_page"
    lowered = markdown[:2000].lower()
    if "captcha" in lowered and ("verify" in lowered or "robot" in lowered):
        return "challenge"
    return None


def _first_heading(markdown: str) -> str:
    for line in markdown[:2000].splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
