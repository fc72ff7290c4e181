"""Reports (Markdown written by the analyses, quoting model text) as safe HTML fragments.

The Markdown is rendered by the report kit's parser, with raw HTML off (a reply holding ``<script>`` is
shown as text) and markdown-it's link check on (``javascript:``, ``vbscript:``, ``file:`` and ``data:``
links are not made links). Images and links are then pointed at this server: a relative reference to a
file listed in the run becomes that file's URL, anything else loses its target, so a report cannot pull
in a file from outside the run or make the browser fetch another site.
"""

from __future__ import annotations

import base64
import html
import posixpath
import re
from collections.abc import Callable
from pathlib import Path

from ..report.html import markdown_parser
from .catalog import read_inside

Resolve = Callable[[str], str | None]
_ANCHOR = re.compile(r"<p>&lt;a id=&quot;([A-Za-z0-9_-]{1,80})&quot;&gt;&lt;/a&gt;</p>")


def _relative(base: str, target: str) -> str | None:
    """``target`` (relative to the folder ``base``) as a normalised relative POSIX path, or None if it
    leaves that root or is absolute or a URL."""
    if not target or "://" in target or target.startswith(("/", "\\")) or ":" in target.split("/")[0]:
        return None
    path = posixpath.normpath(posixpath.join(base, target))
    return None if path.startswith("..") or path.startswith("/") else path


def markdown_fragment(text: str, *, image_src: Resolve, link_href: Resolve) -> str:
    """``text`` as an HTML fragment whose image sources and relative links pass through the resolvers
    (a resolver returning None drops the image, or leaves the link text without a target)."""
    body = markdown_parser().render(text)

    def image(match: re.Match[str]) -> str:
        src = image_src(html.unescape(match.group(1)))
        return f'src="{html.escape(src)}"' if src else 'src="" data-missing="1"'

    def link(match: re.Match[str]) -> str:
        target = html.unescape(match.group(1))
        if target.startswith("#"):
            return match.group(0)
        if target.startswith(("http://", "https://")):
            return f'href="{html.escape(target)}" rel="noreferrer noopener" target="_blank"'
        path, _, anchor = target.partition("#")
        href = link_href(path)
        if href is None:
            return 'class="dead-link"'
        return f'href="{html.escape(href + (f"#{anchor}" if anchor else ""))}"'

    body = re.sub(r'src="([^"]*)"', image, body)
    body = re.sub(r'href="([^"]*)"', link, body)
    # the anchors the game transcripts write as a paragraph of raw HTML (shown escaped, since raw HTML is
    # off) become anchors again: only this exact shape, with an id of letters, digits, '-' and '_'
    body = _ANCHOR.sub(r'<a id="\1"></a>', body)
    # table alignment as a class: the pages' Content-Security-Policy refuses inline styles
    return re.sub(r'style="text-align:(left|right|center)"', r'class="align-\1"', body)


def run_fragment(text: str, md_name: str, files: list[str], file_url: Callable[[str], str]) -> str:
    """A run's Markdown file (``md_name``, relative to the run) with references to the run's listed files
    pointed at their URLs; an ``x.html`` link whose ``x.md`` is listed goes to the rendered Markdown."""
    base = posixpath.dirname(md_name)
    listed = set(files)

    def resolve(target: str) -> str | None:
        path = _relative(base, target)
        if path is None:
            return None
        if path.endswith(".html") and path[:-5] + ".md" in listed:
            path = path[:-5] + ".md"
        return file_url(path) if path in listed else None

    return markdown_fragment(text, image_src=resolve, link_href=resolve)


def folder_fragment(text: str, folder: Path, link_href: Resolve) -> str:
    """Markdown from a temporary output folder (a comparison) with its PNGs embedded as data URIs, and
    its worst-value marks (``<ins>``, :mod:`llmpsych.report.marks`) underlined."""
    from ..report.marks import underline_html

    def image(target: str) -> str | None:
        path = _relative("", target)
        if path is None or not path.lower().endswith(".png"):
            return None
        data = read_inside(folder, path)
        return None if data is None else "data:image/png;base64," + base64.b64encode(data).decode("ascii")

    return underline_html(markdown_fragment(text, image_src=image, link_href=link_href))
