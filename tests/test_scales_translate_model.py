"""``llmpsych scales translate`` against the embedded model: a 3-item scale written here into German."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from llmpsych import cli
from llmpsych.instruments import load_scale_file

THREE_YAML = """\
llmpsych_scale: 1
name: DESK3
language: en
response: {min: 1, max: 5}
scoring: AVG
items:
  - {index: 1, text: My desk is clear at the end of the day.}
  - {index: 2, text: I often lose my keys., reverse: true}
  - {index: 3, text: I plan my week on Monday.}
subscales:
  - {name: Order, items: [1, 2, 3]}
"""


@pytest.mark.model
def test_embedded_model_translates_a_three_item_scale(tmp_path: Path) -> None:
    source = tmp_path / "three.yaml"
    source.write_text(THREE_YAML, encoding="utf-8")
    cli._mount_subcommands()
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli.app,
        ["scales", "translate", str(source), "--to", "de", "-m", "local/qwen2.5-0.5b", "-O", "max_tokens=64"]
        + ["--out", str(out), "--no-cache", "--no-progress"],
    )
    assert result.exit_code == 0, result.output
    [scale] = load_scale_file(out / "three.de.yaml")
    [original] = load_scale_file(source)
    assert scale.language == "de" and scale.translated_from == "en" and scale.reverse_indices == (2,)
    assert scale.translation is not None and scale.translation.model == "local/qwen2.5-0.5b"
    for new, old in zip(scale.items, original.items, strict=True):
        assert new.text != old.text and "\n" not in new.text and new.back_translation
    frame = pd.read_csv(out / "agreement.csv")
    assert len(frame) == 3 and frame["agreement"].between(0, 1).all() and (frame["asks"] >= 2).all()
