"""Paths a run reads reach a cluster's nodes absolute, as the driver sees them; a node that lacks one
says so in one line (the multi-node tests in test_ray_cluster.py run them on a real cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmpsych.errors import ConfigError
from llmpsych.runs.config import parse_run_config
from llmpsych.runs.node_paths import absolute_paths, check_on_node
from llmpsych.runs.planned import same_run


def test_every_path_of_a_config_is_made_absolute_in_the_drivers_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse_run_config(
        {
            "task": "emotionbench",
            "model": "gguf:models/m.gguf?ctx=4096",
            "models": {"judge": "gguf:j.gguf", "other": {"model": "gguf:k.gguf"}},
            "data_dir": "../shared/seed-data",
            "cache_path": "cache.sqlite",
            "options": {"situations_file": "mine/situations.json", "language": "English"},
        }
    )
    sent = absolute_paths(config)
    assert sent.model == f"gguf:{tmp_path}/models/m.gguf?ctx=4096"
    assert sent.models["judge"] == f"gguf:{tmp_path}/j.gguf"
    assert sent.models["other"].model == f"gguf:{tmp_path}/k.gguf"  # type: ignore[union-attr]
    assert sent.data_dir == tmp_path / "../shared/seed-data"
    assert sent.cache_path == tmp_path / "cache.sqlite"
    assert sent.options == {"situations_file": f"{tmp_path}/mine/situations.json", "language": "English"}
    assert config.data_dir == Path("../shared/seed-data")  # the driver's own config is left as given
    assert same_run(sent.stored(), config.stored())  # a sweep resumed here finds the same run


def test_a_node_without_a_path_of_the_config_refuses_in_one_line(tmp_path: Path) -> None:
    config = absolute_paths(parse_run_config({"task": "echo", "data_dir": str(tmp_path / "absent")}))
    with pytest.raises(ConfigError, match=r"--data-dir .*absent is not on the node of a Ray actor on node"):
        check_on_node(config, "the node of a Ray actor")
    config = absolute_paths(parse_run_config({"task": "echo", "model": f"gguf:{tmp_path}/none.gguf"}))
    with pytest.raises(ConfigError, match=r"the model file .*none.gguf is not on"):
        check_on_node(config, "the node of a Ray actor")
    check_on_node(absolute_paths(parse_run_config({"task": "echo", "data_dir": str(tmp_path)})), "here")
