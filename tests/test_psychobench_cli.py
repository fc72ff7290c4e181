"""``llmpsych psychobench run/compare`` through the real CLI against a scripted server."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.psychobench.cipher import decipher
from llmpsych.psychobench.cli import model_dir_name, parse_scales
from llmpsych.psychobench.options import PsychoBenchOptions
from llmpsych.runs import RunStore
from llmpsych.testing.fault_server import FaultServer


def constant_responder(body: dict) -> str:
    """Answers every listed statement with the top of the range, or the bottom for the 'low' model.

    The prompts arrive Caesar-enciphered (after the plain preamble); digits are not shifted.
    """
    system = decipher(body["messages"][0]["content"])
    low, high = (int(x) for x in re.findall(r"from (\d+) to (\d+)", system)[-1])
    listed = re.findall(r"^(\d+)\. ", body["messages"][-1]["content"], flags=re.MULTILINE)
    value = low if body["model"] == "low" else high
    return "\n".join(f"{item}: {value}" for item in listed)


@pytest.fixture(scope="module")
def app():
    cli._mount_subcommands()
    return cli.app


def test_option_parsing() -> None:
    assert parse_scales("all") is None and parse_scales("BFI, EPQ-R") == ["BFI", "EPQ-R"]
    # the run's --scale BFI,EPQ-R is the option's own comma form (the field splits it)
    assert PsychoBenchOptions.model_validate({"scale": "BFI, EPQ-R"}).scale == ["BFI", "EPQ-R"]
    assert model_dir_name("openai-compatible/low") == "openai-compatible_low"


def test_run_two_models_then_compare(app, tmp_path: Path, seed_data: Path) -> None:
    out = tmp_path / "pb"
    with FaultServer(responder=constant_responder) as server:
        result = CliRunner().invoke(
            app,
            [
                "psychobench", "run",
                "--model", "openai-compatible/low", "--model", "openai-compatible/high",
                "--scale", "BFI,DTDD", "--runs", "2", "--persona", "hero", "--cipher",
                "--data-dir", str(seed_data), "--out", str(out), "--base-url", server.base_url,
                "--no-cache", "--no-progress",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    low, high = out / "openai-compatible_low", out / "openai-compatible_high"
    for run_dir in (low, high):
        store = RunStore.in_dir(run_dir)
        try:
            config = store.get_meta("config")
        finally:
            store.close()
        assert config["options"] == {
            "scale": ["BFI", "DTDD"], "runs": 2, "persona": "hero", "cipher": True,
        }  # fmt: skip
        assert config["cache"] is False and config["data_dir"] == str(seed_data)
        assert (run_dir / "report.md").is_file() and (run_dir / "norms.csv").is_file()

    tidy = pd.read_csv(out / "comparison.csv")
    assert set(tidy["model"]) == {"openai-compatible/low [hero]-JB", "openai-compatible/high [hero]-JB"}
    dtdd = tidy[tidy["scale"] == "DTDD"].set_index(["model", "subscale"])
    assert dtdd.loc[("openai-compatible/low [hero]-JB", "Narcissism"), "mean"] == 1
    assert dtdd.loc[("openai-compatible/high [hero]-JB", "Narcissism"), "mean"] == 9
    text = (out / "comparison.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| Scale"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "Scale", "Subscale", "openai-compatible/low [hero]-JB", "openai-compatible/high [hero]-JB", "Crowd",
    ]  # fmt: skip
    narcissism = next(line for line in text.splitlines() if "| Narcissism" in line)
    assert "1.0 ± 0.0" in narcissism and "9.0 ± 0.0" in narcissism
    norms = pd.read_csv(low / "norms.csv")
    crowd = norms[(norms["scale"] == "DTDD") & (norms["subscale"] == "Narcissism")].iloc[0]
    assert f"{crowd['mean']:.1f} ± {crowd['sd']:.1f}" in narcissism

    # compare: stdout, and files; the same table from the run directories alone
    shown = CliRunner().invoke(app, ["psychobench", "compare", str(low), str(high)])
    assert shown.exit_code == 0 and narcissism in shown.output
    again = CliRunner().invoke(app, ["psychobench", "compare", str(high), "--out", str(tmp_path / "c")])
    assert again.exit_code == 0 and (tmp_path / "c" / "comparison.md").is_file()
    missing = CliRunner().invoke(app, ["psychobench", "compare", str(tmp_path)])
    assert missing.exit_code != 0 and "no summary.csv" in str(missing.exception)

    # `llmpsych analyze RUN_DIR` rebuilds the report from the store alone
    (low / "report.md").unlink()
    (low / "summary.csv").unlink()
    rebuilt = CliRunner().invoke(app, ["analyze", str(low)])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert (low / "report.md").is_file() and (low / "summary.csv").is_file() and "wrote" in rebuilt.output


#: Runs the real CLI in a fresh interpreter and prints which of the analysis stack it imported.
_IMPORTED = """
import sys
from llmpsych.cli import main
try:
    main()
finally:
    heavy = sorted(m for m in ("pandas", "scipy", "numpy.linalg", "matplotlib") if m in sys.modules)
    print("IMPORTED=" + ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "mistake",
    [["--scale", "BFX"], ["--template", "v9"]],
    ids=["scale", "template"],
)
def test_a_mistake_is_refused_before_the_analysis_stack_is_imported(
    mistake: list[str], seed_data: Path, tmp_path: Path
) -> None:
    """A typo costs a one-line error, not the ~2 s of CPU that importing pandas and scipy took (they were
    imported by the run layer's score tables and the CLI's analysis imports before any option was read)."""
    import os
    import subprocess
    import sys

    argv = ["llmpsych", "psychobench", "run", *mistake, "--data-dir", str(seed_data)]
    argv += ["--model", "local/qwen2.5-0.5b", "--out", str(tmp_path / "out")]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.argv = {argv!r}\n" + _IMPORTED],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "error:" in done.stderr.lower() or "invalid" in done.stderr.lower(), done.stderr
    assert "IMPORTED=\n" in done.stderr, done.stderr  # neither pandas nor scipy nor matplotlib
