"""One function that writes a run's report: tables (CSV, optional Parquet), figures, Markdown and HTML.

Each benchmark's analysis computes its frames, draws its figures and words its sections;
:func:`write_run_report` writes them the same way for every benchmark: the tables first (so a section
can say whether Parquet was written), then ``report.md`` and its self-contained HTML page beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .html import write_html
from .markdown import write_report
from .tables import write_tables

if TYPE_CHECKING:
    import pandas as pd

Sections = Sequence[tuple[str, str]]


def write_run_report(
    out_dir: Path,
    title: str,
    sections: Sections | Callable[[str | None], Sections],
    *,
    tables: Iterable[tuple[str, pd.DataFrame]] = (),
    parquet: bool = False,
    figures: Iterable[Path | None] = (),
    files: Iterable[Path] = (),
    name: str = "report.md",
    html: bool = True,
    embed_images: bool = True,
    md_links: Sequence[str] = (),
) -> list[Path]:
    """Write ``<name>.csv`` (and ``.parquet`` with ``parquet``) per table, then ``name`` (``# title``
    and its ``## heading`` / body sections) and, with ``html``, the HTML page beside it.

    ``sections`` may be a function of the Parquet note (``None``, or why Parquet was not written).
    ``figures`` are PNGs the analysis drew (``None``: not drawn, e.g. without matplotlib) and ``files``
    other outputs it wrote; both are listed in the paths returned: files, tables, figures, report, page.
    ``embed_images`` puts local PNGs into the page; ``md_links`` are Markdown files whose links the page
    points at their HTML pages.
    """
    written, parquet_note = write_tables(tables, out_dir, parquet=parquet)
    chosen = sections(parquet_note) if callable(sections) else sections
    report = write_report(out_dir / name, title, list(chosen))
    paths = [*files, *written, *(f for f in figures if f is not None), report]
    if html:
        paths.append(write_html(report, embed_images=embed_images, md_links=md_links))
    return paths


__all__ = ["write_run_report"]
