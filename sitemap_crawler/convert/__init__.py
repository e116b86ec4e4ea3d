"""convert: a fetched page becomes a markdown file, written only when it changed.

``markdown.html_to_markdown`` parses the page, reads its metadata (title, robots directives,
canonical) and returns a ``Page``; ``content.choose`` picks the main-content element and the
widgets inside it from signals (generator markup, text and link density; ``signals`` holds
the measures, ``density`` the pick for pages without generator markup); ``render.Renderer``
walks that element to CommonMark + GFM markdown (``shapes`` tells both what an element is:
code, per-line code, admonitions, tabs, grid tables); ``render_document``/``text_document`` put
front matter on top; ``output.OutputLayout`` maps a URL to a safe file path inside
``base_dir`` and writes atomically; ``removal`` deletes or moves the file of a page that is
gone.

May import: the base modules and ``protocol.fsutil`` (atomic writes).  Nothing from
discover, fetch or commands: conversion is a pure function of the page.
"""
