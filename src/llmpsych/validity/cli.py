"""``llmpsych validity ...``: item response models, measurement invariance, self-report against behaviour."""

from __future__ import annotations

import typer

from .. import clikit as kit

app = typer.Typer(
    help="Validity: item response models, invariance, people vs models, self-report vs behaviour.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def validity(debug: kit.DebugOpt = False) -> None:
    """Does a scale measure the same thing in a model as in people? Item response models, measurement
    invariance, people against models on the same items, and self-report against behaviour."""
