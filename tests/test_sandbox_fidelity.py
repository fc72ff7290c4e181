"""HumanEval fidelity: extraction as the paper's harness, and the released MAS-Resilience verdicts.

The released per-system results (``Experiments/<System>/*_results.jsonl`` in CUHK-ARISE/MAS-Resilience,
``{task_id, completion, result, passed}``, judged by OpenAI's human-eval harness) are read at run time
from ``MAS-Resilience-Experiments/`` in the seed data (kept apart from ``MAS-Resilience/``, which equals
its data manifest); nothing of them is copied here. CI always has them: their absence is a failure.

Every push judges a deterministic stratified sample of the released completions (every task with each
released verdict, every results file with each released verdict, and every completion whose verdict may
differ for a known reason); the nightly set (``--nightly``, README: "Tests") judges all of them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmpsych.collab.datasets import load_items
from llmpsych.collab.scoring import check_humaneval, humaneval_source, official_digests
from llmpsych.sandbox import Limits, open_sandbox
from llmpsych.sandbox._pool import WorkerSandbox

pytestmark = pytest.mark.usefixtures("bubblewrap")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[WorkerSandbox]:
    box = open_sandbox(None, Limits(timeout_s=3.0, cpu_s=4))
    yield box
    box.close()


@pytest.fixture(scope="module")
def problems(seed_data: Path) -> dict[str, dict]:
    return {item.item_id: item.reference for item in load_items("humaneval", seed_data)}


@pytest.fixture(scope="module")
def official(seed_data: Path) -> frozenset[str]:
    return official_digests(seed_data)


def test_extraction_follows_the_papers_harness(problems: dict[str, dict]) -> None:
    ref = problems["HumanEval/0"]
    body = ref["canonical_solution"]
    assert humaneval_source(ref, body) == ref["prompt"] + body  # compiles as it is: untouched
    fenced = "Here:\n```python\ndef has_close_elements(numbers, threshold):\n    return False\n```\n"
    assert humaneval_source(ref, fenced).endswith("    return False\n")  # does not compile: the block
    assert humaneval_source(ref, fenced, "strict") == ref["prompt"] + fenced  # strict: always as it is
    # a fence inside a completion that compiles (in a string) is left alone
    quoted = body + 'NOTE = """```python\nx = 1\n```"""\n'
    assert humaneval_source(ref, quoted) == ref["prompt"] + quoted
    assert humaneval_source(ref, None) == humaneval_source(ref, "") == ref["prompt"]


def test_empty_strict_fenced_and_main_blocks(
    sandbox: WorkerSandbox, problems: dict[str, dict], official: frozenset[str]
) -> None:
    ref = problems["HumanEval/0"]
    good = "```python\n" + ref["prompt"] + ref["canonical_solution"] + "```"

    def judge(completion: str | None, extraction: str = "paper") -> bool:
        return asyncio.run(
            check_humaneval(ref, completion, sandbox, extraction=extraction, official=official)
        ).passed

    assert not judge(None) and not judge("")
    assert judge(good) and not judge(good, "strict")
    # As in OpenAI's harness, ``__name__`` is not "__main__": such a block (here, one that fails) is not run.
    assert judge(ref["canonical_solution"] + 'if __name__ == "__main__":\n    raise SystemExit(1)\n')


def test_annotations_are_evaluated_as_in_the_harness(
    sandbox: WorkerSandbox, problems: dict[str, dict], official: frozenset[str]
) -> None:
    # The sandbox's own modules use ``from __future__ import annotations``; a program must not inherit it,
    # or an annotation naming an unimported ``List`` would pass (it fails in OpenAI's harness).
    ref = problems["HumanEval/104"]
    completion = (
        "def unique_digits(x: List[int]) -> List[int]:\n"
        "    return sorted(v for v in x if all(int(d) % 2 for d in str(v)))\n"
    )
    result = asyncio.run(check_humaneval(ref, completion, sandbox, official=official))
    assert not result.passed and "NameError" in result.detail
    fixed = "from typing import List\n" + completion
    assert asyncio.run(check_humaneval(ref, fixed, sandbox, official=official)).passed


# -- the released results ------------------------------------------------------------------------------
def _released(seed_data: Path) -> Path:
    """The released runs' folder in the seed data; missing or without verdict files is a failure."""
    folder = seed_data / "MAS-Resilience-Experiments"
    if not any(folder.rglob("*_results.jsonl")):
        pytest.fail(
            f"the released MAS-Resilience results are not at {folder}: it should hold the Experiments "
            "folder of CUHK-ARISE/MAS-Resilience@d88dbdc, with its *_results.jsonl verdicts"
        )
    return folder


#: Reasons a released verdict may differ from llmpsych's on the same code, recognised from the completion.
HELPERS = {"HumanEval/38": "encode_cyclic", "HumanEval/50": "encode_shift"}


def _reason(task_id: str, completion: str) -> str | None:
    helper = HELPERS.get(task_id)
    if helper and re.search(rf"^def {helper}\(", completion, re.M):
        return f"the completion redefines {helper}, which the test calls to build its inputs"
    return None


#: completions kept per stratum in the push sample
PER_STRATUM = 2


def _sample(
    same: list[tuple[str, str | None]],
    released: dict[tuple[str, str | None], bool],
    source: dict[tuple[str, str | None], str],
) -> list[tuple[str, str | None]]:
    """A deterministic stratified sample of ``same`` (in its order): per (task, released verdict) and per
    (results file, released verdict) the :data:`PER_STRATUM` completions with the smallest SHA-256, so every
    problem's tests, every file (system x fault kind) and both verdicts are judged; and every completion with
    a known reason to differ (:func:`_reason`), so the explained disagreements stay exercised."""

    def digest(key: tuple[str, str | None]) -> str:
        return hashlib.sha256(f"{key[0]}\0{key[1]}".encode()).hexdigest()

    strata: dict[tuple[str, str, bool], list[tuple[str, str | None]]] = {}
    for key in same:
        strata.setdefault(("task", key[0], released[key]), []).append(key)
        strata.setdefault(("file", source[key], released[key]), []).append(key)
    chosen = {key for key in same if _reason(key[0], key[1] or "")}
    for keys in strata.values():
        chosen.update(sorted(keys, key=digest)[:PER_STRATUM])
    return [key for key in same if key in chosen]


@pytest.mark.parametrize("scope", ["sample", pytest.param("all", marks=pytest.mark.nightly)])
def test_released_verdicts_agree_with_openais_harness(
    scope: str,
    seed_data: Path,
    problems: dict[str, dict],
    sandbox: WorkerSandbox,
    official: frozenset[str],
) -> None:
    """Every released completion that runs as it is gets llmpsych's verdict and OpenAI's harness's count.
    ``sample`` (every push) judges :func:`_sample` of them; ``all`` (nightly) judges every one."""
    folder = _released(seed_data)
    released: dict[tuple[str, str | None], bool] = {}
    source: dict[tuple[str, str | None], str] = {}
    for path in sorted(folder.rglob("*_results.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                released[(row["task_id"], row["completion"])] = row["passed"]
                source.setdefault((row["task_id"], row["completion"]), str(path.relative_to(folder)))
    same = [
        key
        for key in released
        if humaneval_source(problems[key[0]], key[1]) == problems[key[0]]["prompt"] + (key[1] or "")
    ]
    assert len(same) > 9000
    runnable = len(same)
    if scope == "sample":
        same = _sample(same, released, source)
        files = {str(path.relative_to(folder)) for path in folder.rglob("*_results.jsonl")}
        assert {source[key] for key in same} == files  # every file is judged
        assert {key[0] for key in same} == set(problems)  # every problem's tests are run
        assert {released[key] for key in same} == {True, False}

    async def judge() -> list:
        gate = asyncio.Semaphore(64)

        async def one(key: tuple[str, str | None]):  # noqa: ANN202
            async with gate:
                return await check_humaneval(problems[key[0]], key[1], sandbox, official=official)

        return await asyncio.gather(*(one(key) for key in same))

    results = asyncio.run(judge())
    disagreements = [
        (key, released[key], result)
        for key, result in zip(same, results, strict=True)
        if result.passed != released[key]
    ]
    unexplained = [
        (k[0], passed, r.status, r.detail[:200])
        for k, passed, r in disagreements
        if not _reason(k[0], k[1] or "")
    ]
    strict = sum(r.passed for r in results)
    reference = sum(r.extra["reference_passed"] for r in results)
    print(
        f"\n{len(released)} distinct completions, {runnable} run as they are, {len(same)} judged ({scope}); "
        f"{len(disagreements)} disagreements, {len(unexplained)} unexplained; "
        f"passed: llmpsych {strict}, as OpenAI's harness would count them {reference}, "
        f"released {sum(released[k] for k in same)}"
    )
    for key, passed, result in disagreements:
        print(f"  {key[0]}: released {passed}, llmpsych {result.passed}: {_reason(key[0], key[1] or '')}")
    assert unexplained == []
    assert reference == sum(released[k] for k in same)  # run as OpenAI's harness runs it: the same count
