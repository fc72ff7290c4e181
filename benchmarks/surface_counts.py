"""Issue 29's counts of the declared surface, computed from a source tree, side by side for two trees.

    python benchmarks/surface_counts.py                                # this tree
    python benchmarks/surface_counts.py --against /tmp/base497         # another tree (its root or its src)
    python benchmarks/surface_counts.py --tree /tmp/old --against /tmp/base497 --list

Each count is computed, none is typed in. Static counts read the tree's files with :mod:`ast`; the command
line, the tasks' ``Options`` and the registries are read by importing the tree's own ``llmpsych`` in a child
process (``PYTHONPATH=<tree>/src``), so two trees never mix. The measures reuse the repository's checkers:
``benchmarks/cli_hand_options.py`` (hand-declared options), ``benchmarks/string_keys.py`` (string-key reads,
positional ``Decision`` calls) and ``tests/test_layers.py`` (the import graph: every import, also in
functions and ``TYPE_CHECKING`` blocks). Definitions, as measured:

- **distinct commands**: leaf commands, hidden ones included, a group mounted under two names counted once
  (same name, same function); **visible commands**: what ``--help`` lists (``clinames.visible_commands``).
- **hand-declared options**: ``typer.Option(`` in the five research CLIs, and those five files' lines.
- **defaults written twice**: an option declared by hand in a ``cli.py`` whose default equals the default
  of the task ``Options`` field it sets (the field of its name, or the key its value is passed under).
- **renaming flags**: an option declared by hand whose value is passed to a task option of another name
  (``"shuffle": not keep_order``), or whose flag is not spelled as the option it sets.
- **nested -O**: ``gamabench run -O guessing.ratio=0.5`` up to the run config (the run is not started).
- **spellings per concept**: the distinct visible flags among each concept's known spellings.
- **stored-call types**: classes with ``request`` and ``response`` fields (a ``Protocol`` is not a shape),
  plus dicts built from ``CALL_COLUMNS``.
- **registry styles**: the distinct implementations behind tasks, games, systems and model backends (a
  shared class counts once; a module's own dict, or an ``if`` chain, is a style of its own).
- **mypy**: ``mypy`` as the tree configures it (strict), with this environment's pandas-stubs installed.

Measured for issue 29 (the report's table): 089522f, the last commit before the issue was filed (its CLI has
the issue's 197 hand-declared options in 2,630 lines), against 497b8ac.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import cli_hand_options  # noqa: E402
import string_keys  # noqa: E402

SHARED = ("models", "runs", "data", "stats", "instruments", "report", "sandbox")
RESEARCH_CLIS = cli_hand_options.FILES

#: Every spelling each concept had on the command line (issue 29), the kept one first.
CONCEPT_SPELLINGS: dict[str, tuple[str, ...]] = {
    "repetitions": ("--runs", "--repeats", "--repetitions", "--reps"),
    "the scale(s)": ("--scale", "--scales"),
    "the output folder": ("--out", "--dest", "--output", "--output-dir", "--out-dir"),
    "the scoring method": ("--method", "--scoring", "--mode", "--logprobs"),
    # beyond the four: a concept a reader meets on several commands
    "a scale file": ("--scale-file", "--file"),
    "the game(s)": ("--game", "--games"),
}
#: The verbs that re-score released data, as they were spelled (issue 29).
RESCORE_VERBS = {"rescore", "score-released", "score-logs", "score-results"}


def _test_layers() -> Any:
    """tests/test_layers.py as a module (its import graph is the measure of layers and loops)."""
    spec = importlib.util.spec_from_file_location("_test_layers", ROOT / "tests" / "test_layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- static counts ----------------------------------------------------------------------------------------
def _literal(node: ast.AST | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


_NOT_LITERAL = object()


def _typer_option(node: ast.AST | None) -> ast.Call | None:
    """The ``typer.Option(...)`` call of an annotation or default, if any."""
    for sub in ast.walk(node) if node is not None else ():
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "Option":
            return sub
    return None


def hand_options(path: Path) -> Iterator[dict[str, Any]]:
    """Each parameter of a function in ``path`` declared with ``typer.Option``: its name, flags, default
    (a literal, or ``_NOT_LITERAL``), the function and the line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    aliases = {  # ScaleOpt = Annotated[..., typer.Option(...)] at module level
        statement.targets[0].id: statement.value
        for statement in tree.body
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name)
    }
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = [*func.args.posonlyargs, *func.args.args]
        defaults: list[ast.expr | None] = [None] * (len(args) - len(func.args.defaults))
        defaults += func.args.defaults
        pairs = [
            *zip(args, defaults, strict=True),
            *zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True),
        ]
        for arg, default in pairs:
            annotation = arg.annotation
            if isinstance(annotation, ast.Name) and annotation.id in aliases:
                annotation = aliases[annotation.id]
            call = _typer_option(annotation)
            value: Any = _literal(default)
            if call is None and isinstance(default, ast.Call):  # x: int = typer.Option(5, "--x")
                call = _typer_option(default)
                first = call.args[0] if call is not None and call.args else None
                is_flag = isinstance(first, ast.Constant) and str(first.value).startswith("-")
                value = _literal(first) if first is not None and not is_flag else None
            if call is None:
                continue
            flags = [
                a.value for a in call.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")
            ]
            flags = [f for flag in flags for f in str(flag).split("/") if f.startswith("--")]
            hidden = any(k.arg == "hidden" and _literal(k.value) is True for k in call.keywords)
            yield {
                "param": arg.arg,
                "flags": flags or ["--" + arg.arg.replace("_", "-")],
                "default": value,
                "hidden": hidden,
                "function": func,
                "line": arg.lineno,
            }


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _builds_options(func: ast.expr) -> bool:
    """A call that builds task options: ``dict(...)``, ``values.update(...)``, ``...Options(...)``,
    ``run_options(...)``."""
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name in ("dict", "update") or name.lower().endswith("options")


def option_targets(func: ast.FunctionDef | ast.AsyncFunctionDef, param: str, fields: set[str]) -> set[str]:
    """The task options a command function passes ``param`` to: keyword arguments of a call that builds
    options and string-keyed dict entries whose value uses the parameter, plus the parameter's own name
    when it is an option."""
    targets = {param} & fields
    for node in ast.walk(func):
        if not isinstance(node, ast.Call) or not _builds_options(node.func):
            continue
        for word in node.keywords:
            if word.arg in fields and param in _names_in(word.value):
                targets.add(word.arg)
    for node in ast.walk(func):
        if isinstance(node, ast.If) and param in _names_in(node.test):  # if logprobs: values["mode"] = ...
            for sub in (s for statement in node.body for s in ast.walk(statement)):
                if isinstance(sub, ast.Assign) and isinstance(sub.targets[0], ast.Subscript):
                    key = sub.targets[0].slice
                    if isinstance(key, ast.Constant) and key.value in fields:
                        targets.add(str(key.value))
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in fields and param in _names_in(value):
                    targets.add(str(key.value))
    return targets


def _same_default(hand: Any, field: Any) -> bool:
    if hand is _NOT_LITERAL or hand is None or field == "<unset>":
        return False
    if isinstance(hand, tuple):
        hand = list(hand)
    return bool(hand == field) and type(hand) is type(field) or (isinstance(hand, float) and hand == field)


def written_twice(src: Path, options: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Hand-declared options (every ``cli.py``) whose default repeats the task option's, and those whose
    flag renames the option it sets; ``options`` maps a package (``games``, ``""`` for the top level) to
    its tasks' option fields and defaults."""
    found: dict[str, list[str]] = {"defaults written twice": [], "renaming flags": []}
    files = sorted(src.glob("llmpsych/*/cli.py")) + [src / "llmpsych" / "cli.py"]
    every: dict[str, Any] = {k: v for fields in options.values() for k, v in fields.items()}
    for path in files:
        area = path.parent.name if path.parent.name != "llmpsych" else ""
        fields = options.get(area) or (every if area == "" else {})
        if not fields:
            continue
        for found_option in hand_options(path):
            param, flags, func = found_option["param"], found_option["flags"], found_option["function"]
            where = f"{path.relative_to(src)}:{found_option['line']} {func.name}({param}) {'/'.join(flags)}"
            targets = option_targets(func, param, set(fields))
            for target in sorted(targets):
                if _same_default(found_option["default"], fields[target]):
                    found["defaults written twice"].append(
                        f"{where} = {found_option['default']!r} (= {target})"
                    )
                spelled = {f.removeprefix("--").replace("-", "_") for f in flags}
                if target not in spelled and not found_option["hidden"]:
                    found["renaming flags"].append(f"{where} sets {target}")
    return found


def stored_call_types(src: Path) -> list[str]:
    """Classes with ``request`` and ``response`` fields (no ``Protocol``), and dicts built from
    ``CALL_COLUMNS``: the shapes a stored call takes."""
    hits: list[str] = []
    for path in sorted((src / "llmpsych").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                names = {
                    s.target.id
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
                if {"request", "response"} <= names and "Protocol" not in bases:
                    hits.append(f"{where}:{node.lineno} class {node.name}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict" and node.args:
                inner = node.args[0]
                zipped = isinstance(inner, ast.Call) and getattr(inner.func, "id", "") == "zip"
                if zipped and any(getattr(a, "id", "") == "CALL_COLUMNS" for a in inner.args):
                    hits.append(f"{where}:{node.lineno} dict(zip(CALL_COLUMNS, ...))")
    return hits


def static_counts(root: Path, research_tasks: set[str], options: dict[str, dict[str, Any]]) -> dict[str, Any]:
    src = root / "src"
    layers = _test_layers()
    layers.SRC = src
    edges, lines = layers.import_graph()
    down = sorted(
        f"{a} imports {b} (line {min(lines[(a, b)])})"
        for a, imported in edges.items()
        if layers._area(a) in SHARED
        for b in imported
        if layers._area(b) in (*layers.RESEARCH, layers.WEB)
    )
    loops = layers.strongly_connected(edges)
    compared = layers.task_name_comparisons(research_tasks) if research_tasks else []
    games = string_keys.count(src / "llmpsych" / "games")
    everywhere = string_keys.count(src / "llmpsych")
    hand = cli_hand_options.counts(root)
    lines_of = sum(
        len((src / "llmpsych" / f).read_text(encoding="utf-8").splitlines()) for f in RESEARCH_CLIS
    )
    twice = written_twice(src, options)
    return {
        "hand_options": (sum(hand.values()), [f"{n:4d} {f}" for f, n in hand.items()]),
        "hand_option_lines": (lines_of, []),
        "defaults_twice": (len(twice["defaults written twice"]), twice["defaults written twice"]),
        "renaming_flags": (len(twice["renaming flags"]), twice["renaming flags"]),
        "shared_importers": (len({d.split()[0] for d in down}), down),
        "task_name_branches": (len(compared), compared),
        "import_loops": (len(loops), [", ".join(c) for c in loops]),
        "files_in_loops": (sum(len(c) for c in loops), []),
        "string_key_reads": (len(games["string_key_reads"]), games["string_key_reads"]),
        "record_field_reads": (len(games["record_field_reads"]), games["record_field_reads"]),
        "positional_decisions": (len(everywhere["positional_decisions"]), everywhere["positional_decisions"]),
        "stored_call_types": (len(stored_call_types(src)), stored_call_types(src)),
    }


def mypy_errors(root: Path) -> tuple[str, list[str]]:
    """Strict mypy as the tree configures it, in this environment (pandas-stubs installed or not)."""
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run(
            [sys.executable, "-m", "mypy", "--cache-dir", cache],
            cwd=root,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(root / "src")},
        )
    last = (done.stdout.strip().splitlines() or ["?"])[-1]
    found = re.search(r"Found (\d+) errors?", last)
    count = found.group(1) if found else ("0" if last.startswith("Success") else f"? ({last[:60]})")
    return count, [line for line in done.stdout.splitlines() if ": error:" in line]


def pandas_stubs(root: Path) -> str:
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    dev = data.get("project", {}).get("optional-dependencies", {}).get("dev", [])
    return "yes" if any(str(d).startswith("pandas-stubs") for d in dev) else "no"


# -- counts read from the tree's own command line, run in a child process ------------------------------
def probe() -> dict[str, Any]:
    """Run with PYTHONPATH=<tree>/src: the command tree, the tasks' options, -O nesting, the registries."""
    import contextlib
    import importlib
    import inspect

    import typer
    from typer.testing import CliRunner

    from llmpsych import cli
    from llmpsych import clikit as kit
    from llmpsych.runs import task as task_module

    cli._mount_subcommands()
    root = typer.main.get_command(cli.app)

    commands: list[dict[str, Any]] = []
    generated = getattr(kit, "GeneratedCommand", None) or getattr(kit, "TaskCommand", None)
    silent: list[str] = []
    switches: set[str] = set()

    def walk(group: Any, path: str, hidden: bool) -> None:
        for name, command in group.commands.items():
            where, hide = f"{path} {name}".strip(), hidden or command.hidden
            subs = getattr(command, "commands", None)
            runs_alone = bool(getattr(command, "invoke_without_command", False))
            callback = inspect.unwrap(command.callback) if command.callback else None
            params = [p for p in command.params if p.param_type_name == "option"]
            if generated is not None and isinstance(command, generated) and not hide:
                silent.extend(f"{where} {f.flag}" for f in command.generated() if not f.help.strip())
            for p in params:
                if "--published" in p.opts and not hide:
                    switches.add("/".join([*p.opts, *p.secondary_opts]))
            commands.append(
                {
                    "path": where,
                    "hidden": hide,
                    "group": bool(subs),
                    "alone": runs_alone,
                    "key": f"{name}:{id(callback)}",
                    "flags": sorted(
                        {o for p in params if not p.hidden for o in p.opts if o.startswith("--")}
                    ),
                    "listing": sorted(subs) if subs else [],
                }
            )
            if subs:
                walk(command, where, hide)

    walk(root, "", False)

    tasks: dict[str, Any] = {}
    targets = getattr(task_module.TASKS, "targets", lambda: dict(task_module.TASKS))()
    for name, target in targets.items():
        area = target.split(":")[0].split(".")[1]
        try:
            model = task_module.task_class(name).Options
        except Exception as exc:  # noqa: BLE001 - a task that cannot load is reported, not fatal
            tasks[name] = {"area": area, "error": str(exc)}
            continue
        fields: dict[str, Any] = {}
        for field, info in model.model_fields.items():
            try:
                value = "<unset>" if info.is_required() else info.get_default(call_default_factory=True)
                fields[field] = json.loads(json.dumps(value))
            except (TypeError, ValueError):
                fields[field] = "<unset>"
        tasks[name] = {"area": area, "fields": fields}

    # -O guessing.ratio=0.5 up to the run config (start() is replaced: no run, no model)
    class Built(Exception):
        pass

    caught: list[Any] = []

    def start(config: Any, flags: Any) -> Any:
        caught.append(config)
        raise Built

    kit.start = start  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        args = ["gamabench", "run", "--players", "2", "--rounds", "1", "--runs", "1", "--no-progress"]
        args += ["--model", "openai-compatible/x", "--base-url", "http://127.0.0.1:9/v1", "--out", tmp + "/r"]
        result = CliRunner().invoke(cli.app, [*args, "-O", "guessing.ratio=0.5"])
    if caught:
        options = dict(caught[0].options)
        nested = options.get("guessing")
        with contextlib.suppress(Exception):
            kit.check_options("gamabench", options)
            nested = options.get("guessing")
        dash_o = "works" if nested == {"ratio": 0.5} else f"built, options {options}"
    else:
        error = result.exception if result.exception is not None else result.output
        dash_o = "refused: " + " ".join(str(error).split())[:90]

    registries: dict[str, str] = {}
    for kind, module_name, attr in [
        ("tasks", "llmpsych.runs.task", "TASKS"),
        ("games", "llmpsych.games.registry", "_GAMES"),
        ("systems", "llmpsych.collab.systems", "SYSTEMS"),
        ("backends", "llmpsych.models.backends", "BACKENDS"),
    ]:
        try:
            found = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError):
            registries[kind] = (
                "none (an if chain in llmpsych.models.client)" if kind == "backends" else "none"
            )
            continue
        kind_of = type(found)
        registries[kind] = (
            f"its own {kind_of.__name__} in {module_name}"
            if kind_of in (dict, list)
            else f"{kind_of.__module__}.{kind_of.__qualname__}"
        )
    return {
        "commands": commands,
        "tasks": tasks,
        "dash_o": dash_o,
        "registries": registries,
        "silent": silent if generated is not None else None,
        "switches": sorted(switches),
    }


def probed(root: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--probe"],
            cwd=cwd,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(root / "src"), "COLUMNS": "200"},
        )
    if done.returncode != 0:
        raise SystemExit(f"probe of {root} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def cli_counts(seen: dict[str, Any]) -> dict[str, Any]:
    commands = seen["commands"]
    leaves = [c for c in commands if not c["group"]]
    visible = [c for c in commands if not c["hidden"] and (not c["group"] or c["alone"])]
    visible_paths = {c["path"] for c in visible}
    top = {c["path"] for c in commands if " " not in c["path"] and not c["hidden"]}
    listings = [tuple(c["listing"]) for c in commands if c["group"] and not c["hidden"] and c["listing"]]
    twice = len(listings) - len(set(listings))
    rescore_visible = sorted(p for p in visible_paths if p.split()[-1] in RESCORE_VERBS)
    shown = {c["key"] for c in visible}
    aliases: dict[str, str] = {}
    for c in commands:
        verb = c["path"].split()[-1]
        if c["hidden"] and not c["group"] and " " in c["path"] and verb in RESCORE_VERBS | {"analyze"}:
            aliases.setdefault(c["key"], c["path"])
    rescore_hidden = sorted(path for key, path in aliases.items() if key not in shown)
    out: dict[str, Any] = {
        "distinct_commands": (len({c["path"].rsplit(" ", 1)[-1] + c["key"] for c in leaves}), []),
        "visible_commands": (len(visible), sorted(visible_paths)),
        "reanalyse_verbs": (len(top & {"analyze", "report"}), sorted(top & {"analyze", "report"})),
        "rescore_visible": (len(rescore_visible), rescore_visible),
        "rescore_hidden": (len(rescore_hidden), rescore_hidden),
        "groups_twice": (twice, sorted(top & {"games", "gamabench"})),
    }
    for concept, spellings in CONCEPT_SPELLINGS.items():
        used = {f for c in visible for f in c["flags"] if f in spellings}
        where = sorted(f"{c['path']} {f}" for c in visible for f in c["flags"] if f in spellings)
        out[f"spell:{concept}"] = (len(used), where)
    out["dash_o"] = (seen["dash_o"], [])
    silent = seen["silent"]
    out["silent_flags"] = ("no generated commands" if silent is None else len(silent), silent or [])
    out["published_switches"] = (len(seen["switches"]), seen["switches"])
    styles = seen["registries"]
    out["registry_styles"] = (len(set(styles.values())), [f"{k}: {v}" for k, v in styles.items()])
    return out


def options_by_area(seen: dict[str, Any]) -> dict[str, dict[str, Any]]:
    areas: dict[str, dict[str, Any]] = {}
    for task in seen["tasks"].values():
        areas.setdefault(task["area"], {}).update(task.get("fields", {}))
    return areas


def research_task_names(seen: dict[str, Any]) -> set[str]:
    research = ("psychobench", "emotion", "games", "reliability", "collab", "quickstart", "validity")
    return {name for name, t in seen["tasks"].items() if t["area"] in research}


ROWS: list[tuple[str, str]] = [
    ("distinct_commands", "distinct commands (hidden included, a group mounted twice once)"),
    ("visible_commands", "commands `--help` lists"),
    ("hand_options", "hand-declared `typer.Option(` in the five research CLIs"),
    ("hand_option_lines", "lines of the five research CLIs"),
    ("defaults_twice", "defaults written twice (hand option = its task option's default)"),
    ("renaming_flags", "visible flags that rename the option they set"),
    ("dash_o", "`gamabench run -O guessing.ratio=0.5`"),
    ("silent_flags", "generated flags without help"),
    ("published_switches", "spellings of the published/corrected switch"),
    ("reanalyse_verbs", "top-level re-analyse verbs in `--help` (analyze/report)"),
    ("rescore_visible", "re-score verbs in `--help` (rescore, score-*)"),
    ("rescore_hidden", "hidden re-score aliases (each function once)"),
    ("groups_twice", "groups listed twice in `--help` (games = gamabench)"),
    ("spell:repetitions", "visible spellings: repetitions"),
    ("spell:the scale(s)", "visible spellings: the scale(s)"),
    ("spell:the output folder", "visible spellings: the output folder"),
    ("spell:the scoring method", "visible spellings: the scoring method"),
    ("spell:a scale file", "visible spellings: a scale file"),
    ("spell:the game(s)", "visible spellings: the game(s)"),
    ("shared_importers", "shared-layer modules importing a research package or web"),
    ("task_name_branches", "shared-layer comparisons with a task's name"),
    ("import_loops", "import loops between files (strongly connected sets)"),
    ("files_in_loops", "files in those loops"),
    ("string_key_reads", "string-key reads in games/"),
    ("record_field_reads", "  of them, stored game record fields"),
    ("stored_call_types", "stored-call types"),
    ("positional_decisions", "positional `Decision(` calls"),
    ("registry_styles", "registry styles (tasks, games, systems, backends)"),
    ("pandas_stubs", "pandas-stubs in the dev extra"),
    ("mypy", "strict mypy errors (pandas-stubs installed)"),
]


def measure(root: Path, mypy: bool) -> dict[str, Any]:
    seen = probed(root)
    counts = {**cli_counts(seen), **static_counts(root, research_task_names(seen), options_by_area(seen))}
    counts["pandas_stubs"] = (pandas_stubs(root), [])
    counts["mypy"] = mypy_errors(root) if mypy else ("not run", [])
    return counts


def tree_root(path: Path) -> Path:
    path = path.resolve()
    return path.parent if (path / "llmpsych").is_dir() and path.name == "src" else path


def main() -> None:
    if "--probe" in sys.argv:
        print(json.dumps(probe()))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="tree A (default: this one)")
    parser.add_argument("--against", type=Path, help="tree B, e.g. /tmp/base497")
    parser.add_argument("--no-mypy", action="store_true", help="skip mypy (about a minute a tree)")
    parser.add_argument("--list", action="store_true", help="print what each count counted")
    args = parser.parse_args()
    trees = [tree_root(args.tree)] + ([tree_root(args.against)] if args.against else [])
    print(f"pandas-stubs installed here: {'yes' if _stubs_installed() else 'no'}")
    results = [measure(tree, not args.no_mypy) for tree in trees]
    head = " | ".join(str(t) for t in trees)
    print(f"\n| count | {head} |\n|---|{'---|' * len(trees)}")
    for key, label in ROWS:
        print(f"| {label} | {' | '.join(str(r[key][0]) for r in results)} |")
    if args.list:
        for key, label in ROWS:
            for tree, result in zip(trees, results, strict=True):
                if result[key][1]:
                    print(f"\n{label} ({tree}):")
                    print("\n".join(f"  {line}" for line in result[key][1]))


def _stubs_installed() -> bool:
    from importlib import metadata

    try:
        metadata.version("pandas-stubs")
    except metadata.PackageNotFoundError:
        return False
    return True


if __name__ == "__main__":
    main()
