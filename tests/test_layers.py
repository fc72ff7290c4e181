"""The layers stay in place: shared layers never import a research package or the web app, only the top-level
CLI imports the web app, and no two files import each other (directly or around a loop).

Every import statement counts: at module level, inside functions and inside ``if TYPE_CHECKING:`` blocks.
An import executes the module it names and every package ``__init__`` on the way (``import a.b.c`` runs
``a/__init__``, ``a/b/__init__`` and ``a/b/c``), so those are edges too, except the importer's own enclosing
packages (they are already being imported when the importer runs). ``from pkg import name`` where
``pkg.name`` is a module imports that module as well. The graph is built from the source with ``ast``, so it
holds for code paths no test happens to import. Under a second for the ~250 files."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "llmpsych"

#: The shared layers, and what they may never import.
SHARED = ("models", "runs", "data", "stats", "instruments", "report", "sandbox", "serving")
RESEARCH = ("psychobench", "emotion", "games", "reliability", "collab", "quickstart", "validity")
WEB = "web"
#: The only modules outside ``web/`` that may import it: the top-level command line lists its subcommand.
#: (The fault endpoint, a server of its own, shares the socket, connection limits, token and Host check
#: with the web pages through the shared layer ``serving/``, not through ``web``.)
WEB_IMPORTERS = {"llmpsych.cli", "llmpsych.__main__"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package ``__init__``), for every file under ``src/llmpsych``."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def _named(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The dotted names an import statement may execute (a ``from`` import's names may be submodules)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    if node.level:
        base = module.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    yield target
    for alias in node.names:
        yield f"{target}.{alias.name}"


def import_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[int]]]:
    """Module -> the llmpsych modules it imports; and (importer, imported) -> the line numbers."""
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    lines: dict[tuple[str, str], list[int]] = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for dotted in _named(name, is_package, node):
                parts = dotted.split(".")
                for i in range(1, len(parts) + 1):
                    prefix = ".".join(parts[:i])
                    if prefix not in modules or f"{name}.".startswith(f"{prefix}."):
                        continue  # not ours, or the importer itself / one of its enclosing packages
                    edges[name].add(prefix)
                    lines.setdefault((name, prefix), []).append(node.lineno)
    return edges, lines


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted; only those with a loop (size > 1)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _one_loop(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """One concrete loop through the component's first module (shortest, breadth first), to show."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return component


def _area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_sees_every_kind_of_import() -> None:
    """The checker itself: imports in functions, under TYPE_CHECKING, relative, and submodules by name."""
    edges, _ = import_graph()
    # runs/__init__ names its submodules only under TYPE_CHECKING (they are imported lazily)
    assert "llmpsych.runs.frames" in edges["llmpsych.runs"]
    # the CLI imports each command group inside a function
    assert "llmpsych.runs.task" in edges["llmpsych.cli"] or any(
        m.startswith("llmpsych.runs") for m in edges["llmpsych.cli"]
    )
    # importing a package's module runs the package's __init__ too
    assert "llmpsych.models" in edges["llmpsych.runs.context"]
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(loop) == [["a", "b", "c"]]
    assert _one_loop(["a", "b", "c"], loop) == ["a", "b", "c", "a"]


def test_shared_layers_import_no_research_package_and_no_web() -> None:
    edges, lines = import_graph()
    bad = [
        f"{importer} imports {imported} (line {min(lines[(importer, imported)])})"
        for importer, imported_set in sorted(edges.items())
        if _area(importer) in SHARED
        for imported in sorted(imported_set)
        if _area(imported) in (*RESEARCH, WEB)
    ]
    assert not bad, "a shared layer names a research package or the web app:\n" + "\n".join(bad)


def test_only_the_top_level_cli_imports_the_web_app() -> None:
    edges, lines = import_graph()
    bad = [
        f"{importer} imports {imported} (line {min(lines[(importer, imported)])})"
        for importer, imported_set in sorted(edges.items())
        if _area(importer) != WEB and importer not in WEB_IMPORTERS
        for imported in sorted(imported_set)
        if _area(imported) == WEB
    ]
    assert not bad, "the web app is imported from below:\n" + "\n".join(bad)


def _research_task_names() -> set[str]:
    from llmpsych.runs.task import TASKS

    return {name for name, target in TASKS.targets().items() if _area(target.partition(":")[0]) in RESEARCH}


def task_name_comparisons(names: set[str]) -> list[str]:
    """Each comparison with one of the task ``names`` in a shared layer's module."""
    bad = []
    for module, (path, _) in _modules().items():
        if _area(module) not in SHARED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            for side in [node.left, *node.comparators]:
                values = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                named = [v.value for v in values if isinstance(v, ast.Constant) and v.value in names]
                if named:
                    bad.append(f"{module} (line {node.lineno}) compares with task name(s) {named}")
    return bad


def test_shared_layers_ask_the_task_instead_of_comparing_its_name() -> None:
    """``task == "psychobench"`` or ``task in ("emotionbench", ...)`` in a shared layer is a benchmark's case
    handled below it; the shared code asks the task through a hook on ``Task`` instead."""
    names = _research_task_names()
    assert {"psychobench", "emotionbench", "gamabench", "reliability"} <= names
    bad = task_name_comparisons(names)
    assert not bad, "a shared layer branches on a benchmark's name:\n" + "\n".join(bad)


def test_no_import_loops_between_files() -> None:
    edges, lines = import_graph()
    components = strongly_connected(edges)
    shown = []
    for component in components:
        loop = _one_loop(component, edges)
        steps = " -> ".join(f"{a} (line {min(lines[(a, b)])})" for a, b in zip(loop, loop[1:], strict=False))
        shown.append(f"{len(component)} files: {', '.join(component)}\n    e.g. {steps} -> {loop[-1]}")
    assert not components, f"{len(components)} import loops:\n" + "\n".join(shown)


#: Words that name a research benchmark's texts; instruments/ may name the official questionnaire datasets
#: (PsychoBench, EmotionBench) but none of the texts other benchmarks translate with its kit.
_BENCHMARK_TEXT_WORDS = ("situation", "game", "gama-bench", "gamabench", "scenario")


def benchmark_text_kinds_in(text: str, literals: set[str], phrases: set[str]) -> list[tuple[int, str]]:
    """``(line, name)`` of each place in a module's ``text`` that names a research benchmark's text kind:
    a string constant equal to one of ``literals`` (an option or kind a benchmark registers:
    ``"situation"``), or, anywhere (comments and docstrings too), one of ``phrases`` or
    :data:`_BENCHMARK_TEXT_WORDS`."""
    import re

    words = re.compile(
        "|".join(
            [
                *map(re.escape, sorted(phrases, key=len, reverse=True)),
                *(rf"\b{w}" for w in _BENCHMARK_TEXT_WORDS),
            ]
        ),
        re.IGNORECASE,
    )
    found = [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and node.value in literals
    ]
    for number, line in enumerate(text.splitlines(), start=1):
        found += [(number, name) for name in words.findall(line)]
    return sorted(found)


def test_the_translation_kit_names_no_benchmark_text_kind() -> None:
    """instruments/ holds the translation kit: it knows a benchmark's texts (EmotionBench's situations,
    GAMA-Bench's templates) only through what the benchmark registers with it (its option, its kinds of
    text, its prompts and its translated file), so a new benchmark's texts need no change below; the
    options and kinds come from the registrations themselves."""
    import llmpsych.translate  # noqa: F401 - the task as runs find it: every benchmark's texts registered
    from llmpsych.instruments.translate import TranslateTask, sources

    registered = [s for s in sources() if _area(type(s).__module__) in RESEARCH]
    assert {s.option for s in registered} >= {"situations_file", "game_templates"}
    assert {"situations_file", "game_templates"} <= set(TranslateTask.Options.model_fields)
    literals = {s.option for s in registered} | {kind for s in registered for kind in s.kinds}
    phrases = {s.option for s in registered} | {words for s in registered for words in s.kinds.values()}
    bad = []
    for module, (path, _) in _modules().items():
        if _area(module) == "instruments":
            text = path.read_text(encoding="utf-8")
            bad += [
                f"{module} (line {n}) names {name!r}"
                for n, name in benchmark_text_kinds_in(text, literals, phrases)
            ]
            bad += [f"{module} names llmpsych.{r}" for r in RESEARCH if f"llmpsych.{r}" in text]
    assert not bad, "the translation kit names a benchmark's texts:\n" + "\n".join(bad)
    # the checker itself, on lines of the kit before it was one: a branch on a kind, its words, a loader
    old = (
        'SITUATIONS = "situations"\n'
        'if p["kind"] == "template":\n'
        '    what = "game prompt passage"\n'
        '_TEXTS = {"situations": "llmpsych.emotion.translation:SITUATION_TEXTS"}\n'
    )
    assert benchmark_text_kinds_in(old, literals, phrases) == [
        (1, "SITUATION"),
        (1, "situation"),
        (2, "template"),
        (3, "game prompt passage"),
        (4, "SITUATION"),
        (4, "situation"),
    ]
