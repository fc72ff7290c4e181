"""The ASGI application: the runs page, a run's page, a unit's transcripts, a run's files, the compare page.

Starlette (not FastAPI): the pages are server-rendered HTML with no API schema to generate, so the
extra layer buys nothing; Starlette brings routing, Jinja2 templates and static files in ~6k lines.
Page functions are synchronous (SQLite and file reads), so Starlette runs them in its thread pool and
one slow page never stalls the server. Every page is read-only.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ..errors import LlmpsychError
from . import store
from .catalog import CONTENT_TYPES, STATUSES, Catalog, RunInfo, links_in, read_inside
from .compare import COMPARISONS, compare_html
from .render import markdown_fragment, run_fragment
from .security import Gate
from .transcript import page_threads, task_keys

#: Where ``/reproduce`` finds ``llmpsych reproduce``'s report: ``--out <runs folder>/reproduce``.
REPRODUCE_REPORT = "reproduce/reproduce.md"

UNITS_PER_PAGE = 50
RUNS_PER_PAGE = 200
#: Characters of a unit's stored result shown on its page (the rest is in the store / `llmpsych export`).
RESULT_CHARS = 20_000
#: Calls of one unit shown on one page.
CALLS_PER_PAGE = 200
SORT_KEYS = {
    "started": lambda i: i.started or 0.0,
    "run": lambda i: i.label,
    "task": lambda i: i.task,
    "status": lambda i: i.status,
    "progress": lambda i: i.progress,
    "valid": lambda i: -1.0 if i.valid_rate is None else i.valid_rate,
}

_PACKAGE = resources.files("llmpsych.web")


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_PACKAGE / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["when"] = _when
    env.filters["seconds"] = _seconds
    return Jinja2Templates(env=env)


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "–"
    try:
        return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError, OSError):  # a stored time no calendar holds (year 10,000 and on)
        return f"{stamp!r} (not a time)"


def _seconds(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _int(value: str | None, default: int, low: int, high: int) -> int:
    try:
        return min(max(int(value or default), low), high)
    except ValueError:
        return default


def _pretty(value: Any) -> str:
    """Indented JSON with lists of plain values kept on one line (an item order, a list of scores)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return _SCALAR_LIST.sub(lambda m: "[" + ", ".join(_SCALAR.findall(m.group(1))) + "]", text)


_SCALAR = re.compile(r'-?[\d.eE+-]+|true|false|null|"(?:[^"\\\n]|\\.){0,80}"')
_SCALAR_LIST = re.compile(r"\[((?:\s*(?:" + _SCALAR.pattern + r"),?)+\s*)\]")


class Pages:
    """The page functions, over one :class:`Catalog`."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.templates = _templates()

    def _render(self, request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        return self.templates.TemplateResponse(request, template, context, status_code=code)

    def _run(self, request: Request) -> RunInfo:
        info = self.catalog.info(request.path_params["run_id"])
        if info is None:
            raise HTTPException(404, "no such run")
        return info

    # -- runs ------------------------------------------------------------------------------------------
    def runs(self, request: Request) -> Response:
        q = request.query_params
        infos = self.catalog.infos()
        tasks = sorted({i.task for i in infos})
        task, status, text = q.get("task", ""), q.get("status", ""), q.get("q", "").strip().lower()
        sort = q.get("sort", "started") if q.get("sort") in SORT_KEYS else "started"
        descending = q.get("order", "desc") != "asc"
        shown = [
            i
            for i in infos
            if (not task or i.task == task)
            and (not status or i.status == status)
            and (not text or text in i.label.lower() or any(text in m.lower() for m in i.models))
        ]
        shown.sort(key=SORT_KEYS[sort], reverse=descending)
        page = _int(q.get("page"), 1, 1, max(1, math.ceil(len(shown) / RUNS_PER_PAGE)))
        return self._render(
            request,
            "runs.html",
            runs=shown[(page - 1) * RUNS_PER_PAGE : page * RUNS_PER_PAGE],
            total=len(infos),
            matching=len(shown),
            page=page,
            pages=max(1, math.ceil(len(shown) / RUNS_PER_PAGE)),
            tasks=tasks,
            statuses=STATUSES,
            task=task,
            status=status,
            q=q.get("q", ""),
            sort=sort,
            order="desc" if descending else "asc",
            sort_keys=list(SORT_KEYS),
            roots=self.catalog.roots,
            comparable=COMPARISONS,
        )

    def runs_json(self, request: Request) -> Response:
        return JSONResponse({"runs": [i.as_json() for i in self.catalog.infos()]})

    # -- one run -----------------------------------------------------------------------------------------
    def run(self, request: Request) -> Response:
        info = self._run(request)
        q = request.query_params
        status = q.get("status", "") if q.get("status") in ("pending", "running", "done", "failed") else ""
        files = self.catalog.files(info.run_id)
        if info.status == "unreadable":
            return self._unreadable(request, info, files)
        context: dict[str, Any] = {"run": info, "files": files, "unit_status": status}
        try:
            meta = store.read_meta(info.run_dir)
            count = store.units_page(info.run_dir, status=status or None, offset=0, limit=0)[1]
            pages = max(1, math.ceil(count / UNITS_PER_PAGE))
            page = _int(q.get("page"), 1, 1, pages)
            units, _ = store.units_page(
                info.run_dir, status=status or None, offset=(page - 1) * UNITS_PER_PAGE, limit=UNITS_PER_PAGE
            )
        except LlmpsychError as exc:
            return self._unreadable(request, info, files, exc)
        report = next((f for f in ("report.md", "leaderboard.md", "comparison.md") if f in files), None)
        context.update(
            config=_pretty(meta.get("config")),
            manifest=_pretty(meta.get("manifest")),
            units=units,
            unit_count=count,
            page=page,
            pages=pages,
            report_name=report,
            report=self._report(info, report, files) if report else None,
            images=[f for f in files if f.endswith(".png")],
        )
        return self._render(request, "run.html", **context)

    def _unreadable(
        self, request: Request, info: RunInfo, files: list[str], exc: LlmpsychError | None = None
    ) -> Response:
        """The page for a run whose store cannot be read (``exc``, else as the catalog found it): why,
        and the run's files as found on disk.

        422 for a store that is damaged, empty or not a run store (the server works; this run's data
        does not), 503 with ``Retry-After`` for one another process held too long."""
        busy = isinstance(exc, store.StoreBusy) if exc is not None else info.busy
        message = str(exc) if exc is not None else str(info.error)
        response = self._render(
            request, "error.html", 503 if busy else 422, message=message, run=info, files=files
        )
        if busy:
            response.headers["retry-after"] = "2"
        return response

    def _report(self, info: RunInfo, name: str, files: list[str]) -> str | None:
        data = self.catalog.read_file(info.run_id, name)
        if data is None:
            return None
        return _rendered(info.run_id, name, data, tuple(files))

    def run_json(self, request: Request) -> Response:
        return JSONResponse(self._run(request).as_json())

    def unit(self, request: Request) -> Response:
        info = self._run(request)
        unit_id = request.query_params.get("id", "")
        if info.status == "unreadable":  # a unit of such a run is not shown either
            return self._unreadable(request, info, self.catalog.files(info.run_id))
        try:
            found = store.read_unit(info.run_dir, unit_id)
        except LlmpsychError as exc:
            return self._unreadable(request, info, self.catalog.files(info.run_id), exc)
        if found is None:
            raise HTTPException(404, "no such unit")
        unit, calls, failures = found
        pages = max(1, math.ceil(len(calls) / CALLS_PER_PAGE))
        page = _int(request.query_params.get("page"), 1, 1, pages)
        start = (page - 1) * CALLS_PER_PAGE
        grouping = task_keys(store.read_meta(info.run_dir), unit["result"], calls) if unit["result"] else None
        result = _pretty(unit["result"])
        return self._render(
            request,
            "unit.html",
            run=info,
            unit=unit,
            threads=page_threads(calls, grouping, start, start + CALLS_PER_PAGE),
            calls=len(calls),
            per_page=CALLS_PER_PAGE,
            page=page,
            pages=pages,
            failures=failures,
            payload=_pretty(unit["payload"])[:RESULT_CHARS],
            result=result[:RESULT_CHARS],
            result_cut=len(result) > RESULT_CHARS,
            tokens=(
                sum(c.prompt_tokens or 0 for c in calls),
                sum(c.completion_tokens or 0 for c in calls),
            ),
            latency=sum(c.latency_s or 0.0 for c in calls),
        )

    def file(self, request: Request) -> Response:
        info = self._run(request)
        name = request.path_params["name"]
        files = self.catalog.files(info.run_id)
        data = self.catalog.read_file(info.run_id, name)
        if data is None:
            raise HTTPException(404, "no such file in this run")
        suffix = os.path.splitext(name)[1].lower()
        if suffix == ".md" and request.query_params.get("raw") != "1":
            return self._render(
                request,
                "file.html",
                run=info,
                name=name,
                body=_rendered(info.run_id, name, data, tuple(files)),
            )
        return Response(data, media_type=CONTENT_TYPES[suffix])

    # -- compare -----------------------------------------------------------------------------------------
    def compare(self, request: Request) -> Response:
        chosen = list(dict.fromkeys(request.query_params.getlist("run")))[:50]
        infos = self.catalog.infos()
        by_id = {i.run_id: i for i in infos}
        picked = [by_id[r] for r in chosen if r in by_id]
        context: dict[str, Any] = {
            "groups": {
                task: [i for i in infos if i.task == task]
                for task in COMPARISONS
                if any(i.task == task for i in infos)
            },
            "titles": {t: c.title for t, c in COMPARISONS.items()},
            "chosen": {i.run_id for i in picked},
            "result": None,
            "error": None,
            "title": None,
        }
        if chosen and len(picked) != len(chosen):
            context["error"] = "some chosen runs no longer exist"
        elif unreadable := [i for i in picked if i.status == "unreadable"]:
            context["error"] = f"{unreadable[0].label} cannot be compared: {unreadable[0].error}"
        elif picked:
            tasks = {i.task for i in picked}
            if len(tasks) > 1:
                context["error"] = f"choose runs of one benchmark (chosen: {', '.join(sorted(tasks))})"
            elif linked := [(i.label, links_in(i.run_dir)) for i in picked if links_in(i.run_dir)]:
                label, links = linked[0]
                context["error"] = (
                    f"{label} holds symbolic links ({', '.join(links)}); runs with links are not compared"
                )
            else:
                task = tasks.pop()
                dirs = {os.path.realpath(i.run_dir): i.run_id for i in infos}

                def link(path: Path) -> str | None:
                    run_id = dirs.get(os.path.realpath(path.parent))
                    if run_id is None:
                        return None
                    if path.name == "report.md":
                        return f"/run/{run_id}"
                    return f"/run/{run_id}/file/{quote(path.name)}"

                try:
                    context["result"] = compare_html(task, [i.run_dir for i in picked], link)
                    context["title"] = COMPARISONS[task].title
                except LlmpsychError as exc:
                    context["error"] = str(exc)
        return self._render(request, "compare.html", **context)

    # -- reproduce -------------------------------------------------------------------------------------
    def reproduce(self, request: Request) -> Response:
        """The report of ``llmpsych reproduce --out <runs folder>/reproduce`` (published tables
        recomputed from the released data), read like a run's file: no link is followed."""
        for root in self.catalog.roots:
            data = read_inside(root, REPRODUCE_REPORT)
            if data is not None:
                text = data.decode("utf-8", errors="replace")
                body = markdown_fragment(text, image_src=lambda _t: None, link_href=lambda _t: None)
                return self._render(request, "reproduce.html", body=body, source=str(root / REPRODUCE_REPORT))
        roots = [str(r) for r in self.catalog.roots]
        return self._render(request, "reproduce.html", body=None, source=None, roots=roots)


@functools.lru_cache(maxsize=64)
def _rendered(run_id: str, name: str, data: bytes, files: tuple[str, ...]) -> str:
    """A run's Markdown file as HTML (cached: a large report renders once per content)."""
    text = data.decode("utf-8", errors="replace")
    return run_fragment(text, name, list(files), lambda path: f"/run/{run_id}/file/{quote(path)}")


async def _not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return HTMLResponse(
        _templates().get_template("error.html").render(message=detail, request=request), status_code=status
    )


def create_app(
    roots: list[Path],
    *,
    token: str,
    port: int,
    hosts: set[str],
    rescan_s: float = 2.0,
    extra_routes: list[Route] | None = None,
) -> Gate:
    """The whole application for the runs under ``roots``, behind its :class:`Gate` (``extra_routes``:
    further read-only pages behind the same gate, e.g. a hosted session's monitor)."""
    pages = Pages(Catalog(roots, rescan_s))
    routes = [
        Route("/", pages.runs),
        Route("/api/runs", pages.runs_json),
        Route("/compare", pages.compare),
        Route("/reproduce", pages.reproduce),
        Route("/run/{run_id}", pages.run),
        Route("/api/run/{run_id}", pages.run_json),
        Route("/run/{run_id}/unit", pages.unit),
        Route("/run/{run_id}/file/{name:path}", pages.file),
        Mount("/static", StaticFiles(directory=str(_PACKAGE / "static")), name="static"),
        *(extra_routes or []),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _not_found})
    return Gate(app, token=token, port=port, hosts=hosts)
