"""Markdown reports as self-contained HTML pages (markdown-it-py, already a dependency of rich).

Raw HTML in the Markdown is *not* passed through (model answers and user text stay text: ``<script>``
is shown, escaped, never run), and only PNGs inside the report's folder are embedded. Headings get
GitHub-style ``id`` slugs, so ``transcripts.md#bfi-run-1`` works both on GitHub and, rewritten to
``transcripts.html#bfi-run-1``, in the HTML page. Local PNGs are embedded as data URIs by default, so the
page can be sent on its own; links to other files stay relative.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .files import atomic_write_text

if TYPE_CHECKING:  # imported where a page is rendered: a run imports this module before its first request
    from markdown_it import MarkdownIt

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:72rem;margin:2rem auto;
padding:0 1rem;line-height:1.45;color:#1a1a1a}
table{border-collapse:collapse;margin:.8rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}
th{background:#f2f2f2}tr:nth-child(even) td{background:#fafafa}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap}
img{max-width:100%}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
"""


def slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped (``-`` and ``_`` kept), spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def _heading_ids(md: MarkdownIt) -> None:
    def rule(state: Any) -> None:
        seen: dict[str, int] = {}
        tokens = state.tokens
        for i, token in enumerate(tokens):
            if token.type != "heading_open" or i + 1 >= len(tokens):
                continue
            base = slug(tokens[i + 1].content)
            count = seen.get(base, 0)
            seen[base] = count + 1
            token.attrSet("id", base if count == 0 else f"{base}-{count}")

    md.core.ruler.push("heading_ids", rule)


def markdown_parser() -> MarkdownIt:
    """CommonMark with tables and strikethrough, raw HTML off, heading ids on."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    _heading_ids(md)
    return md


def _rewrite(body: str, base_dir: Path, embed_images: bool, md_links: Sequence[str]) -> str:
    import html  # where a page is rendered (its entity table: a few ms a run would import for nothing)

    def image(match: re.Match[str]) -> str:
        src = html.unescape(match.group(1))
        path = base_dir / src
        if embed_images and "://" not in src and src.lower().endswith(".png") and _within(path, base_dir):
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            return f'src="data:image/png;base64,{data}"'
        return match.group(0)

    def link(match: re.Match[str]) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if target in md_links:
            return f'href="{target[:-3]}.html{anchor}"'
        return match.group(0)

    body = re.sub(r'src="([^"]+)"', image, body)
    return re.sub(r'href="([^"#:]+\.md)(#[^"]*)?"', link, body)


def _within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is a file inside ``folder`` once links are followed: an image reference in a
    model's answer (``![x](../../secret.png)``) must not pull a file from elsewhere into the page."""
    try:
        return path.resolve().is_relative_to(folder.resolve()) and path.is_file()
    except OSError:
        return False


def markdown_to_html(
    text: str,
    *,
    title: str,
    base_dir: Path,
    embed_images: bool = True,
    md_links: Sequence[str] = (),
    underline: bool = False,
) -> str:
    """A complete HTML page for ``text``; links to the Markdown files in ``md_links`` point to their HTML.

    ``underline``: ``<ins>``/``</ins>`` in the text become underline tags (the worst-value marks of
    :mod:`.marks`); every other tag stays escaped text.
    """
    import html

    body = _rewrite(markdown_parser().render(text), base_dir, embed_images, md_links)
    if underline:
        from .marks import underline_html

        body = underline_html(body)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )


def write_html(
    md_path: Path,
    *,
    embed_images: bool = True,
    md_links: Sequence[str] = (),
    title: str | None = None,
    underline: bool = False,
) -> Path:
    """Write ``<name>.html`` beside ``md_path``; the title defaults to the first ``#`` heading
    (``underline``: as :func:`markdown_to_html`)."""
    text = md_path.read_text(encoding="utf-8")
    if title is None:
        first = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), None)
        title = first or md_path.stem
    page = markdown_to_html(
        text,
        title=title,
        base_dir=md_path.parent,
        embed_images=embed_images,
        md_links=md_links,
        underline=underline,
    )
    return atomic_write_text(md_path.with_suffix(".html"), page)


def html_beside(paths: Sequence[Path]) -> list[Path]:
    """``paths`` plus an HTML page beside each Markdown report among them that has none yet (the reports
    of runs, comparisons, leaderboards and presets: every ``report*.md``, ``comparison.md``,
    ``leaderboard.md`` and ``summary.md``)."""
    out = list(paths)
    for path in paths:
        is_report = path.name.startswith("report") or path.stem in ("comparison", "leaderboard", "summary")
        if path.suffix == ".md" and is_report and path.with_suffix(".html") not in out and path.is_file():
            out.append(write_html(path))
    return out


def fenced(text: str, info: str = "text") -> str:
    """``text`` as a fenced code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"
