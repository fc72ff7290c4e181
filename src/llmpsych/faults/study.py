"""A fault study: a user's multi-agent system run over fault plans × tasks × repetitions, scored per plan.

``llmpsych faults study clean.toml inject.toml --system "python my_team.py" --tasks tasks.jsonl --scorer
score.py:judge --model SPEC --runs 3 --out study/`` runs the system once per cell (plan, task,
repetition), each time behind a fresh fault endpoint (:func:`llmpsych.faults.endpoint.running`) that
forwards to the upstream model, applies the plan and records every request in its own run folder
(``endpoints/<plan>/<index>-<task>/r<repetition>``, with its ``ground_truth.csv``). Then it scores the
system's answer and writes the tables of ``llmpsych mas compare`` for plans instead of conditions.

The system is any command. For each cell it gets, in its environment, ``OPENAI_BASE_URL`` (and
``OPENAI_API_BASE``) = the endpoint's URL and ``OPENAI_API_KEY`` = the endpoint's token (never the
upstream key: every variable that holds a model key, ``LLMPSYCH_API_KEY``, ``OPENROUTER_API_KEY``, a
config file's ``api_key_env`` ..., is removed from its environment), plus ``LLMPSYCH_TASK_ID``,
``LLMPSYCH_PLAN`` and ``LLMPSYCH_REPETITION``; the task row (one JSON object) is written to its standard
input as one line; its answer is what it prints on standard output. It runs as a subprocess in a session
of its own, killed (the whole group) after ``timeout`` seconds or once it prints more than
:data:`MAX_ANSWER_BYTES`; only the last :data:`STDERR_TAIL` bytes of its standard error are kept. A system
that exits non-zero, times out or prints too much has failed the task: the cell scores 0 and is counted as
``system_failed`` (under a transport fault, that is what the fault did).

The scorer judges an answer against its task row and returns a score on 0-100 (``True``/``False`` count as
100/0): the built-in ``humaneval`` (the problem's tests against the answer in the sandbox, exactly as
``mas run`` scores HumanEval: :func:`llmpsych.collab.scoring.check_humaneval`), a Python function
``module:function`` or ``path/to/file.py:function`` called with ``(task, answer)``, or any other command,
given ``{"task": ..., "answer": ...}`` as one JSON line on standard input and expected to print one number
or ``true``/``false`` (timeout and output bounded as for the system). A score that cannot be had (the
scorer failed or printed something else) is not a number: the cell is ``unscored``, left out of the mean,
and the tables say how many.

Per plan, the tables give n (cells), the cells scored, the system failures, the unscored cells, the mean
score over the scored cells, the cells in which the upstream model failed, the relative drop against the
clean plan (no faults, no defences) and, for a plan with defences, the recovery of what the same faults
without defences lost: the formulas of ``mas compare`` (:func:`llmpsych.collab.experiments.relative_drop`
and :func:`~.experiments.recovery`), with a plan in place of a condition. Each finished cell is appended
to ``cells.jsonl`` the moment it is scored; the same command with the same ``--out`` skips the finished
cells and resumes an unfinished cell's endpoint run from its store.

Repetition ``r`` runs the plan with seed ``plan.seed + r`` (repetition 0 uses the plan's own seed), so the
repetitions draw their faults independently and a re-run draws the same ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import importlib.util
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from ..errors import ConfigError, DataError, LlmpsychError
from ..report.files import atomic_write_text, output_dir, write_csv
from ..report.html import html_beside
from ..report.markdown import table, write_report
from ..userfiles import parse_json, read_text
from .plan import FaultPlan, load_plan

#: The most bytes of standard output read from the system or a scorer command; beyond, it is killed.
MAX_ANSWER_BYTES = 1 << 20
#: The bytes of standard error kept (the end of it), for the cell's record.
STDERR_TAIL = 4000
#: The largest tasks file read.
MAX_TASKS_BYTES = 256 << 20
#: The built-in scorer's name.
HUMANEVAL = "humaneval"
#: The study's description of itself, checked on resume.
STUDY_FILE = "study.json"
CELLS_FILE = "cells.jsonl"


# -- running a command, bounded ---------------------------------------------------------------------
@dataclass
class Ran:
    """What a bounded subprocess did: its exit code (None when killed), its output, how it ended."""

    returncode: int | None
    stdout: bytes
    stderr_tail: bytes
    status: str  # "ok", "exit N", "timeout", "output over limit", "cannot start: ..."
    seconds: float


def run_bounded(
    argv: Sequence[str],
    stdin: bytes,
    *,
    env: dict[str, str] | None = None,
    timeout: float,
    limit: int = MAX_ANSWER_BYTES,
) -> Ran:
    """Run ``argv`` (no shell) with ``stdin``; kill its whole process group after ``timeout`` seconds or
    once its standard output passes ``limit`` bytes. Standard error is drained, its tail kept."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own process group: a timeout ends its children too
        )
    except OSError as exc:
        return Ran(None, b"", b"", f"cannot start: {exc.strerror or exc}", 0.0)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = bytearray()
    over = threading.Event()

    def kill() -> None:
        with contextlib.suppress(OSError):  # already gone
            os.killpg(proc.pid, signal.SIGKILL)

    def read_out() -> None:
        assert proc.stdout is not None
        while chunk := os.read(proc.stdout.fileno(), 65536):
            if len(out) + len(chunk) > limit:
                over.set()
                kill()
                break
            out.extend(chunk)

    def read_err() -> None:
        assert proc.stderr is not None
        while chunk := os.read(proc.stderr.fileno(), 65536):
            err.extend(chunk)
            del err[:-STDERR_TAIL]

    def write_in() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except OSError:  # the program did not read its input: its business
            pass

    threads = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err, write_in)]
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill()
        proc.wait()
    kill()  # children left behind by a program that has exited
    for t in threads:
        t.join(5)
    seconds = time.monotonic() - start
    if timed_out:
        return Ran(None, bytes(out), bytes(err), f"timeout after {timeout:g} s", seconds)
    if over.is_set():
        return Ran(None, bytes(out), bytes(err), f"output over {limit:,} bytes", seconds)
    code = proc.returncode
    return Ran(code, bytes(out), bytes(err), "ok" if code == 0 else f"exit {code}", seconds)


def command_argv(command: str, what: str) -> list[str]:
    """A command line split as a POSIX shell would split words (no shell runs it)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"{what}: cannot split {command!r}: {exc}") from None
    if not argv:
        raise ConfigError(f"{what}: empty command")
    return argv


# -- tasks ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StudyTask:
    """One task row: its id (``id``, else ``task_id``, else ``line-N``) and the row as given."""

    task_id: str
    row: dict[str, Any]

    @property
    def line(self) -> bytes:
        """The row as the system reads it: one JSON line."""
        return json.dumps(self.row, ensure_ascii=False).encode() + b"\n"

    @property
    def prompt(self) -> str:
        """The row's ``prompt`` (else ``input``, else ``question``), for the plan's task description."""
        for key in ("prompt", "input", "question"):
            if isinstance(self.row.get(key), str):
                return str(self.row[key])
        return ""


def load_tasks(path: Path) -> list[StudyTask]:
    """A JSON Lines file of task objects (blank lines skipped); ids must differ."""
    text = read_text(path, "tasks file", MAX_TASKS_BYTES, error=ConfigError)
    tasks: list[StudyTask] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        row = parse_json(line, f"{path}, line {number}", error=ConfigError)
        if not isinstance(row, dict):
            raise ConfigError(f"{path}, line {number}: a task is a JSON object, got {type(row).__name__}")
        raw = row.get("id", row.get("task_id", f"line-{number}"))
        if not isinstance(raw, str | int) or isinstance(raw, bool) or not str(raw).strip():
            raise ConfigError(f"{path}, line {number}: a task id is a non-empty string or integer")
        tasks.append(StudyTask(str(raw), row))
    if not tasks:
        raise ConfigError(f"{path}: no tasks")
    seen: set[str] = set()
    for task in tasks:
        if task.task_id in seen:
            raise ConfigError(f"{path}: task id {task.task_id!r} appears twice")
        seen.add(task.task_id)
    return tasks


# -- scorers ----------------------------------------------------------------------------------------
class ScoreUnavailable(Exception):
    """The scorer gave no score for this answer (the reason is recorded with the cell)."""


class Scorer(Protocol):
    """Judges a system's answer to a task: a score on 0-100."""

    name: str

    def score(self, task: StudyTask, answer: str) -> float:
        """The score, or :class:`ScoreUnavailable`."""
        ...

    def close(self) -> None:
        """Release what the scorer holds (a sandbox)."""
        ...


def score_value(value: object, origin: str) -> float:
    """A scorer's value as a score: ``True``/``False`` = 100/0, a finite number in 0-100 as it is."""
    if isinstance(value, bool):
        return 100.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 100:
        return float(value)
    raise ScoreUnavailable(f"{origin} gave {str(value)[:80]!r}, not a score (0-100, true or false)")


@dataclass
class FunctionScorer:
    """A Python function ``(task row, answer) -> bool | number`` named ``module:function`` or
    ``file.py:function``."""

    name: str
    function: Callable[[dict[str, Any], str], object]

    def score(self, task: StudyTask, answer: str) -> float:
        try:
            value = self.function(dict(task.row), answer)
        except Exception as exc:  # the user's function failed on this answer: no score, said why
            raise ScoreUnavailable(f"{self.name} raised {type(exc).__name__}: {str(exc)[:200]}") from None
        return score_value(value, self.name)

    def close(self) -> None:
        pass


@dataclass
class CommandScorer:
    """A command given ``{"task": ..., "answer": ...}`` on standard input; it prints the score."""

    name: str
    argv: list[str]
    timeout: float

    def score(self, task: StudyTask, answer: str) -> float:
        line = json.dumps({"task": task.row, "answer": answer}, ensure_ascii=False).encode() + b"\n"
        ran = run_bounded(self.argv, line, timeout=self.timeout, limit=64 << 10)
        if ran.status != "ok":
            raise ScoreUnavailable(f"scorer command: {ran.status}")
        text = ran.stdout.decode("utf-8", "replace").strip()
        try:
            value = json.loads(text)
        except ValueError:
            raise ScoreUnavailable(f"scorer command printed {text[:80]!r}, not a score") from None
        return score_value(value, "scorer command")

    def close(self) -> None:
        pass


@dataclass
class HumanEvalScorer:
    """The built-in scorer: a HumanEval row's tests against the answer, in the sandbox, judged outside it
    (:func:`llmpsych.collab.scoring.check_humaneval`, as ``mas run`` judges; ``paper`` extraction)."""

    data_dir: Path | None = None
    timeout: float = 3.0
    extraction: str = "paper"
    name: str = HUMANEVAL
    _pool: Any = None
    _loop: asyncio.AbstractEventLoop | None = None
    _official: frozenset[str] = field(default_factory=frozenset)

    def _open(self) -> Any:
        if self._pool is None:
            from ..collab.scoring import official_digests
            from ..sandbox import INSTALL_HINT, Limits, SandboxUnavailable, available, open_sandbox

            if not available():
                raise ConfigError(
                    "the humaneval scorer runs model-written code: it needs bubblewrap", INSTALL_HINT
                )
            pool = open_sandbox(1, Limits(timeout_s=self.timeout, cpu_s=int(self.timeout) + 1))
            try:
                pool.probe()
            except SandboxUnavailable as exc:
                pool.close()
                raise ConfigError(f"the sandbox does not start: {exc}", INSTALL_HINT) from None
            self._pool = pool
            self._loop = asyncio.new_event_loop()
            self._official = official_digests(self.data_dir)
        return self._pool

    def score(self, task: StudyTask, answer: str) -> float:
        from ..collab.scoring import check_humaneval

        missing = [k for k in ("prompt", "test", "entry_point") if not isinstance(task.row.get(k), str)]
        if missing:
            raise ScoreUnavailable(f"task {task.task_id} is no HumanEval row: no {', '.join(missing)}")
        pool = self._open()
        assert self._loop is not None
        outcome = self._loop.run_until_complete(
            check_humaneval(task.row, answer, pool, extraction=self.extraction, official=self._official)
        )
        return 100.0 * outcome.passed

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._loop is not None:
            self._loop.close()
            self._loop = None


_FUNCTION = re.compile(r"^(?P<target>[^\s:]+):(?P<function>[A-Za-z_][A-Za-z0-9_]*)$")


def make_scorer(spec: str, *, data_dir: Path | None = None, timeout: float = 60.0) -> Scorer:
    """``humaneval``, ``module:function``, ``file.py:function``, or a command line."""
    spec = spec.strip()
    if spec == HUMANEVAL:
        return HumanEvalScorer(data_dir)
    match = _FUNCTION.match(spec)
    if match:
        target, name = match["target"], match["function"]
        try:
            if target.endswith(".py"):
                loader = importlib.util.spec_from_file_location(Path(target).stem, target)
                if loader is None or loader.loader is None or not Path(target).is_file():
                    raise ConfigError(f"--scorer {spec}: no file {target}")
                module = importlib.util.module_from_spec(loader)
                loader.loader.exec_module(module)
            else:
                module = importlib.import_module(target)
        except LlmpsychError:
            raise
        except Exception as exc:  # an import of the user's module failed: one line, no traceback
            raise ConfigError(
                f"--scorer {spec}: cannot import {target}: {type(exc).__name__}: {exc}"
            ) from None
        function = getattr(module, name, None)
        if not callable(function):
            raise ConfigError(f"--scorer {spec}: {target} has no function {name!r}")
        return FunctionScorer(spec, function)
    return CommandScorer(spec, command_argv(spec, "--scorer"), timeout)


# -- the study --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StudyPlan:
    """A plan of the study, named by its file's stem."""

    name: str
    plan: FaultPlan

    @property
    def clean(self) -> bool:
        """No faults and no defences: the plan the others are compared with."""
        return not self.plan.faults and not self.plan.defences

    @property
    def faults_text(self) -> str:
        return ", ".join(f"{f.kind}@{f.agent}" for f in self.plan.faults) or "none"

    @property
    def defences_text(self) -> str:
        return ", ".join(f"{d.kind}@{d.agent}" for d in self.plan.defences) or "none"


def load_plans(paths: Sequence[Path]) -> list[StudyPlan]:
    """Each plan file, named by its stem; two files of one stem are refused."""
    plans = [StudyPlan(Path(p).stem, load_plan(p)) for p in paths]
    names = [p.name for p in plans]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(
            f"plans: two plan files named {', '.join(twice)}", "a plan is named by its file's stem"
        )
    if not plans:
        raise ConfigError("give at least one plan file")
    return plans


@dataclass
class Study:
    """Everything a study needs (the CLI's flags)."""

    system: list[str]
    plans: list[StudyPlan]
    tasks: list[StudyTask]
    scorer: Scorer
    runs: int
    out: Path
    upstream: str
    base_url: str | None = None
    timeout: float = 600.0
    workers: int = 1  # cells run side by side (each behind its own endpoint)
    env: dict[str, str] = field(default_factory=dict)  # added to the system's environment (tests, docs)

    def describe(self) -> dict[str, Any]:
        """What must not change when the study is resumed in the same folder."""
        return {
            "system": self.system,
            "plans": {p.name: p.plan.model_dump(mode="json") for p in self.plans},
            "tasks": hashlib.sha256(b"".join(t.line for t in self.tasks)).hexdigest(),
            "scorer": self.scorer.name,
            "runs": self.runs,
            "upstream": self.upstream,
            "base_url": self.base_url,
        }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:60] or "task"


def cell_dir(out: Path, plan: str, index: int, task: StudyTask, repetition: int) -> Path:
    """The endpoint run folder of a cell."""
    return out / "endpoints" / plan / f"{index:04d}-{_slug(task.task_id)}" / f"r{repetition}"


def _finished(path: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if path.exists():
        text = read_text(path, "study cells file", 1 << 30, error=DataError)
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            if number == len(lines) and not text.endswith("\n"):  # cut off while written: run it again
                atomic_write_text(path, text[: text.rfind("\n") + 1])
                break
            row = parse_json(line, f"{path}, line {number}")
            done[(row["plan"], row["task"], int(row["repetition"]))] = row
    return done


def _check_resume(study: Study) -> None:
    path = study.out / STUDY_FILE
    described = study.describe()
    if path.exists():
        stored = parse_json(read_text(path, "study file", 1 << 26), str(path))
        if stored != json.loads(json.dumps(described)):
            changed = sorted(k for k in described if stored.get(k) != json.loads(json.dumps(described[k])))
            raise ConfigError(
                f"{study.out} holds a study with other settings ({', '.join(changed)})",
                "use a new --out, or the same settings to resume it",
            )
    else:
        atomic_write_text(path, json.dumps(described, indent=2) + "\n")


def _ground_truth_rows(run_dir: Path) -> int | None:
    path = run_dir / "ground_truth.csv"
    if not path.exists():
        return None
    return len(pd.read_csv(path))


def _upstream_failures(run_dir: Path) -> int:
    """Requests of the cell that the endpoint could not answer because the upstream model failed (the
    endpoint answered HTTP 502; a unit of its run marked failed)."""
    from ..runs.store import RunStore

    with RunStore.in_dir(run_dir, readonly=True) as store:
        return len(store.units("failed"))


def key_variables() -> set[str]:
    """The environment variables that hold model keys: those of the built-in endpoints and of the config
    file's endpoints (``api_key_env``)."""
    from ..config import user_config
    from ..models.spec import BUILTIN_ENDPOINTS

    names = {env for _, env in BUILTIN_ENDPOINTS.values() if env}
    names |= {e.api_key_env for e in user_config().endpoints.values() if e.api_key_env}
    return names


def system_environment() -> dict[str, str]:
    """This process's environment without any model key: the system gets the endpoint's token instead, so
    a framework cannot reach the upstream (or anything else) with the user's key behind the endpoint."""
    hidden = key_variables()
    return {k: v for k, v in os.environ.items() if k not in hidden}


def run_cell(
    study: Study,
    plan: StudyPlan,
    index: int,
    task: StudyTask,
    repetition: int,
    scoring: threading.Lock | None = None,
) -> dict[str, Any]:
    """Serve the plan, run the system on the task, score its answer: the cell's row."""
    from ..runs.store import STORE_FILE
    from .endpoint import running

    run_dir = cell_dir(study.out, plan.name, index, task, repetition)
    seeded = plan.plan.model_copy(
        update={"seed": plan.plan.seed + repetition, "task": plan.plan.task or task.prompt[:20_000]}
    )
    if (run_dir / STORE_FILE).exists():
        serving = running(resume=run_dir, base_url=study.base_url)
    else:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        serving = running(seeded, upstream=study.upstream, base_url=study.base_url, out=run_dir)
    with serving as endpoint:
        env = {
            **system_environment(),
            **study.env,
            "OPENAI_BASE_URL": endpoint.base_url,
            "OPENAI_API_BASE": endpoint.base_url,
            "OPENAI_API_KEY": endpoint.token,
            "LLMPSYCH_TASK_ID": task.task_id,
            "LLMPSYCH_PLAN": plan.name,
            "LLMPSYCH_REPETITION": str(repetition),
        }
        ran = run_bounded(study.system, task.line, env=env, timeout=study.timeout)
    answer = ran.stdout.decode("utf-8", "replace").strip() if ran.status == "ok" else ""
    row: dict[str, Any] = {
        "plan": plan.name,
        "task": task.task_id,
        "repetition": repetition,
        "status": ran.status,
        "seconds": round(ran.seconds, 3),
        "answer": answer,
        "stderr_tail": ran.stderr_tail.decode("utf-8", "replace"),
        "changes": _ground_truth_rows(run_dir),
        "upstream_failures": _upstream_failures(run_dir),
        "endpoint_run": str(run_dir.relative_to(study.out)),
        "score": None,
        "score_note": "",
    }
    if ran.status != "ok":
        row["score"], row["score_note"] = 0.0, "system failed: the task is failed"
    else:
        try:
            with scoring or contextlib.nullcontext():  # a scorer judges one answer at a time
                row["score"] = study.scorer.score(task, answer)
        except ScoreUnavailable as exc:
            row["score_note"] = str(exc)
    return row


def cells(study: Study) -> Iterator[tuple[StudyPlan, int, StudyTask, int]]:
    """Every cell, plan by plan, task by task, repetition by repetition."""
    for plan in study.plans:
        for index, task in enumerate(study.tasks):
            for repetition in range(study.runs):
                yield plan, index, task, repetition


def run_study(study: Study, progress: Callable[[str], None] | None = None) -> list[Path]:
    """Run every unfinished cell, ``study.workers`` at a time (each appended to ``cells.jsonl`` when
    scored; the scorer judges one answer at a time), then write the tables."""
    output_dir(study.out)
    _check_resume(study)
    path = study.out / CELLS_FILE
    done = _finished(path)
    total = len(study.plans) * len(study.tasks) * study.runs
    todo = [
        (number, cell)
        for number, cell in enumerate(cells(study), 1)
        if (cell[0].name, cell[2].task_id, cell[3]) not in done
    ]
    scoring, writing = threading.Lock(), threading.Lock()

    def one(item: tuple[int, tuple[StudyPlan, int, StudyTask, int]]) -> None:
        number, (plan, index, task, repetition) = item
        row = run_cell(study, plan, index, task, repetition, scoring)
        with writing:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            done[(plan.name, task.task_id, repetition)] = row
            if progress:
                score = "unscored" if row["score"] is None else f"{row['score']:g}"
                where = f"{plan.name} · {task.task_id} · run {repetition}"
                progress(f"[{number}/{total}] {where}: {row['status']}, {score}")

    try:
        with ThreadPoolExecutor(study.workers) as pool:
            for _ in pool.map(one, todo):
                pass
    finally:
        study.scorer.close()
    rows = [done[(p.name, t.task_id, r)] for p, _, t, r in cells(study)]
    return write_tables(study.plans, pd.DataFrame(rows), study.out)


# -- the tables -------------------------------------------------------------------------------------
def plan_table(plans: Sequence[StudyPlan], frame: pd.DataFrame) -> pd.DataFrame:
    """One row per plan: n, scored, failures, mean score, relative drop vs clean, recovery (mas compare's
    formulas, a plan in place of a condition)."""
    from ..collab.experiments import recovery, relative_drop

    rows = []
    for plan in plans:
        mine = frame[frame.plan == plan.name]
        scored = mine.score.dropna()
        rows.append(
            {
                "plan": plan.name,
                "faults": plan.faults_text,
                "defences": plan.defences_text,
                "n": len(mine),
                "scored": len(scored),
                "system_failed": int((mine.status != "ok").sum()),
                "unscored": int(mine.score.isna().sum()),
                "upstream_failed": int((mine.upstream_failures > 0).sum()),
                "messages_changed": int(mine.changes.fillna(0).sum()),
                "score": float(scored.mean()) if len(scored) else math.nan,
            }
        )
    out = pd.DataFrame(rows)
    clean = [p for p in plans if p.clean]
    clean_score = float(out.set_index("plan").score[clean[0].name]) if clean else math.nan
    drops, recoveries = [], []
    for plan, score in zip(plans, out.score, strict=True):
        drops.append(math.nan if plan.clean else relative_drop(clean_score, score))
        undefended = [
            q
            for q in plans
            if not q.plan.defences and q.plan.faults == plan.plan.faults and plan.plan.defences
        ]
        if undefended and not plan.clean and plan.plan.faults:
            faulty = float(out.set_index("plan").score[undefended[0].name])
            recoveries.append(recovery(clean_score, faulty, score))
        else:
            recoveries.append(math.nan)
    out["relative_drop_pct"] = drops
    out["recovery_pct"] = recoveries
    return out


def write_tables(plans: Sequence[StudyPlan], frame: pd.DataFrame, out: Path) -> list[Path]:
    """``cells.csv`` (a row per cell), ``plans.csv`` and ``comparison.md`` (+ HTML)."""
    summary = plan_table(plans, frame)
    outputs = [
        write_csv(frame.drop(columns=["answer", "stderr_tail"]), out / "cells.csv"),
        write_csv(summary, out / "plans.csv"),
    ]
    clean = [p.name for p in plans if p.clean]
    baseline = (
        f"The clean plan is `{clean[0]}` (no faults, no defences)."
        if clean
        else "No plan is clean (without faults and defences): no relative drop or recovery can be computed."
    )
    notes = (
        f"{baseline} Score: the mean over the scored cells (0-100); `n` counts cells (tasks × runs), "
        "`scored` the cells in the mean, `system_failed` the cells where the system exited non-zero, timed "
        "out or printed too much (scored 0: the task was failed), `unscored` the cells the scorer gave no "
        "score for (left out; their reasons are in cells.csv), `upstream_failed` the cells where the "
        "upstream model failed at least once (the endpoint answered HTTP 502: not a fault of the plan; such "
        "cells are scored as they ended). Relative drop (%) = 100 · (clean − plan) / "
        "clean; recovery (%) = 100 · (defended − faulty) / (clean − faulty), where faulty is the plan with "
        "the same faults and no defences (the formulas of `llmpsych mas compare`). `messages_changed` counts "
        "the rows of the cells' ground_truth.csv."
    )
    by_task = frame.pivot_table(index="task", columns="plan", values="score", aggfunc="mean", sort=False)
    counts = frame.pivot_table(index="task", columns="plan", values="score", aggfunc="count", sort=False)
    sections = [
        ("Plans", notes + "\n\n" + table(summary)),
        (
            "Score by task (mean over the scored runs; the counts of scored runs below)",
            table(by_task.reset_index()) + "\n\n" + table(counts.reset_index(), floatfmt=".0f"),
        ),
    ]
    outputs.append(write_report(out / "comparison.md", "Fault study", sections))
    return html_beside(outputs)


def describe_system(command: str) -> list[str]:
    """The system's command line, split (``--system``)."""
    argv = command_argv(command, "--system")
    if argv[0] in {"python", "python3"}:  # the interpreter llmpsych runs under, so its packages are there
        argv[0] = sys.executable
    return argv
