"""``llmpsych faults ...``: serve a fault-injecting endpoint; score an attribution method."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import SecretStr

from .. import clikit as kit
from ..report.terminal import InertConsole
from . import study_cli

app = typer.Typer(
    help="Faults and defences around any multi-agent system: a fault-injecting endpoint, attribution.",
    no_args_is_help=True,
    add_completion=False,
)
console = InertConsole(soft_wrap=True)


@app.callback()
def faults(debug: kit.DebugOpt = False) -> None:
    """Faults and defences around any multi-agent system: a fault-injecting endpoint, attribution."""


@app.command("serve")
def serve(
    plan: Annotated[
        Path | None, typer.Option(help="The fault plan (TOML, or JSON by its .json name).")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="The upstream model spec the endpoint forwards to (its key stays its own)."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Base URL of an openai-compatible/<model> upstream.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Run folder to record into (a folder of runs: a new run in it).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Continue this endpoint run (its stored plan and model).")
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to listen on (default loopback: this machine only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: a free one).", min=0, max=65535)] = 0,
    seed: Annotated[int | None, typer.Option(help="Seed of every fault draw (default: the plan's).")] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(help="Where to write the bearer token (mode 0600; default: in the user cache)."),
    ] = None,
) -> None:
    """Serve an OpenAI-compatible endpoint that forwards to --model and applies the fault plan; point a
    framework at the printed base URL with the token as its API key. Ctrl-C stops it and writes the
    ground-truth table."""
    from ..errors import ConfigError
    from ..models.embedded import write_token_file
    from ..paths import cache_dir
    from ..serving.hosts import new_token
    from .endpoint import running, warning_lines
    from .plan import load_plan

    if resume is None and (plan is None or model is None):
        raise ConfigError("faults serve needs --plan and --model (or --resume RUN_DIR)")
    if resume is not None and (plan is not None or model is not None):
        raise ConfigError("--resume serves the run's stored plan and model: give neither --plan nor --model")
    token = new_token()
    loaded = load_plan(plan) if plan is not None else None
    with running(
        loaded, upstream=model, base_url=base_url, out=out, resume=resume, host=host, port=port, seed=seed,
        token=token,
    ) as endpoint:  # fmt: skip
        where = endpoint.base_url.split("//", 1)[1].split("/", 1)[0].replace(":", "-")
        token_path = token_file or cache_dir() / "faults" / f"{where}.token"
        write_token_file(token_path, SecretStr(token))
        console.print(f"fault endpoint at {endpoint.base_url} (OpenAI-compatible; Ctrl-C to stop)")
        console.print(f"recording into {endpoint.run_dir}")
        console.print(f"bearer token (mode 0600): {token_path}")
        for line in warning_lines(host):
            console.print(line)
        console.print(
            f"point a framework at it with: OPENAI_BASE_URL={endpoint.base_url} "
            f"OPENAI_API_KEY=$(cat {token_path})"
        )
        signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it as Ctrl-C does: the truth is written
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            console.print("stopped; writing the ground truth")
        finally:
            token_path.unlink(missing_ok=True)
    console.print(f"ground truth: {endpoint.run_dir / 'ground_truth.csv'}")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


@app.command("attribution")
def attribution(
    truth: Annotated[
        list[Path],
        typer.Option(
            help="Ground truth: endpoint run folders, or ground_truth.csv/.parquet files. Repeatable."
        ),
    ],
    predictions: Annotated[
        Path, typer.Option(help="The method's predictions: CSV or JSON lines with run, agent[, turn].")
    ],
) -> None:
    """Score an attribution method's predictions (which agent, which turn) against the ground truth, at
    agent and step level, with every n."""
    import pandas as pd

    from .truth import attribution_score, read_table

    tables = []
    runs: list[str] = []
    for path in truth:
        table = read_table(path, "ground-truth table")
        tables.append(table)
        if path.is_dir():
            runs.append(path.name)
    score = attribution_score(
        pd.concat(tables, ignore_index=True), read_table(predictions, "predictions file"), runs
    )
    for line in score.lines():
        console.print(line)


app.command("study")(study_cli.study)  # llmpsych faults study: in its own module (faults/study_cli.py)
