"""Actors the Ray cluster can never place (GPUs it lacks, more CPUs than a node has, more actors than
its nodes hold) are refused in one line before anything is made, not after the start timeout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmpsych.errors import ConfigError
from llmpsych.runs import parse_run_config, start_run
from llmpsych.runs.executors import ExecutorSettings, use
from llmpsych.runs.ray_executor import check_resources
from llmpsych.testing.fault_server import FaultServer
from llmpsych.testing.runs import run_cli, unit_results

LAPTOP = [{"CPU": 8.0, "memory": 1e10}]
GPU_CLUSTER = [{"CPU": 16.0}, {"CPU": 8.0, "GPU": 1.0}, {"CPU": 8.0, "GPU": 1.0}]


@pytest.mark.parametrize(
    ("settings", "nodes"),
    [
        (ExecutorSettings(kind="ray", actors=8), LAPTOP),
        (ExecutorSettings(kind="ray", actors=3, cpus_per_actor=0.3), [{"CPU": 0.9}]),  # 0.9/0.3 is 2.999...
        (ExecutorSettings(kind="ray", actors=1000, cpus_per_actor=0), LAPTOP),  # asks nothing
        (ExecutorSettings(kind="ray", actors=4, gpus_per_actor=0.5), GPU_CLUSTER),  # two per GPU
        (ExecutorSettings(kind="ray", actors=2, cpus_per_actor=8, gpus_per_actor=1), GPU_CLUSTER),
    ],
)
def test_what_the_cluster_can_hold_is_accepted(settings: ExecutorSettings, nodes: Any) -> None:
    check_resources(settings, nodes)


@pytest.mark.parametrize(
    ("settings", "nodes", "message"),
    [
        (
            ExecutorSettings(kind="ray", actors=1, gpus_per_actor=1),
            LAPTOP,
            "--actor-gpus 1: the Ray cluster has no GPUs (drop --actor-gpus, or give the --ray-address of "
            "a cluster with GPU nodes)",
        ),
        (
            ExecutorSettings(kind="ray", actors=1, cpus_per_actor=12),
            LAPTOP,
            "--actor-cpus 12: no node of the Ray cluster has 12 CPUs (the most a node has is 8) (ask for "
            "at most --actor-cpus 8)",
        ),
        (
            ExecutorSettings(kind="ray", actors=1, gpus_per_actor=2),
            GPU_CLUSTER,
            "--actor-gpus 2: no node of the Ray cluster has 2 GPUs (the most a node has is 1)",
        ),
        (
            ExecutorSettings(kind="ray", actors=1, cpus_per_actor=12, gpus_per_actor=1),
            GPU_CLUSTER,
            "no node of the Ray cluster has 12 CPUs and 1 GPU for one actor",
        ),
        (
            ExecutorSettings(kind="ray", actors=5, gpus_per_actor=0.5),
            GPU_CLUSTER,
            "the Ray cluster has room for 4 of the 5 actors with 1 CPU and 0.5 GPUs each",
        ),
        (
            ExecutorSettings(kind="ray", actors=9),
            LAPTOP,
            "the Ray cluster has room for 8 of the 9 actors with 1 CPU each (ask for fewer --actors",
        ),
        (ExecutorSettings(kind="ray", actors=1), [], "--actor-cpus 1: the Ray cluster has no CPUs"),
    ],
)
def test_what_the_cluster_can_never_hold_is_one_line(
    settings: ExecutorSettings, nodes: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        check_resources(settings, nodes)
    assert message in str(refused.value) and "\n" not in str(refused.value)


# -- on a real local Ray (127.0.0.1) ----------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_cpus() -> Iterator[tuple[float, float]]:
    """A local Ray instance on loopback, as ``--executor ray`` starts one: its CPUs and GPUs."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'llmpsych[ray]'")
    from llmpsych.runs.ray_executor import connect

    assert connect(ExecutorSettings(kind="ray", actors=1))
    try:
        total = ray.cluster_resources()
        yield float(total.get("CPU", 0)), float(total.get("GPU", 0))
    finally:
        ray.shutdown()


def _echo(server: FaultServer) -> Any:
    return parse_run_config(
        {
            "task": "echo",
            "model": "openai-compatible/m",
            "base_url": server.base_url,
            "cache": False,
            "options": {"units": 2, "turns": 1},
        }
    )


@pytest.mark.ray
@pytest.mark.parametrize("what", ["gpus", "cpus", "actors"])
def test_a_request_the_connected_cluster_can_never_place_leaves_no_run_behind(
    what: str, ray_cpus: tuple[float, float], tmp_path: Path
) -> None:
    cpus, gpus = ray_cpus
    settings = {
        "gpus": ExecutorSettings(kind="ray", actors=1, gpus_per_actor=gpus + 1),
        "cpus": ExecutorSettings(kind="ray", actors=1, cpus_per_actor=cpus + 1),
        "actors": ExecutorSettings(kind="ray", actors=int(cpus) + 1),
    }[what]
    expected = {
        "gpus": "--actor-gpus",
        "cpus": f"--actor-cpus {cpus + 1:g}: no node of the Ray cluster has",
        "actors": f"the Ray cluster has room for {cpus:g} of the {cpus + 1:g} actors",
    }[what]
    with FaultServer() as server, use(settings):
        with pytest.raises(ConfigError, match=expected):
            start_run(_echo(server), tmp_path / "r", False)
        assert not server.hits
    assert not (tmp_path / "r").exists()


@pytest.mark.ray
def test_the_cli_refuses_gpus_a_cluster_without_gpus_lacks_and_runs_without(tmp_path: Path) -> None:
    """``--actor-gpus 1`` on a private Ray of a machine without GPUs: one line, exit 2, no run folder (not
    the start timeout's message); ``--actor-gpus 0`` runs."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'llmpsych[ray]'")
    with FaultServer() as server:
        flags = ["--task", "echo", "--model", "openai-compatible/m", "--base-url", server.base_url]
        flags += ["--no-cache", "--no-progress", "-O", "units=2", "--executor", "ray", "--actors", "1"]
        refused = run_cli("run", *flags, "--actor-gpus", "1", "--out", tmp_path / "gpu")
        if refused.returncode == 0:
            pytest.skip("this machine has a GPU")
        errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert refused.returncode == 2 and errors == [
            "error: --actor-gpus 1: the Ray cluster has no GPUs (drop --actor-gpus, or give the "
            "--ray-address of a cluster with GPU nodes)"
        ], refused.stderr
        assert errors[0] == refused.stderr.strip().splitlines()[-1] and not (tmp_path / "gpu").exists()
        assert not server.hits
        ran = run_cli("run", *flags, "--actor-gpus", "0", "--out", tmp_path / "cpu")
        assert ran.returncode == 0, ran.stderr
    assert len(unit_results(tmp_path / "cpu")) == 2
