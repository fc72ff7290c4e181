"""The sandbox as an ordinary user (bubblewrap's user namespace), run from this root test as uid 65534.

Skipped unless the tests run as root and a system Python and this checkout are usable by that uid.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from llmpsych.sandbox import available

SOURCE = Path(__file__).resolve().parents[1] / "src" / "llmpsych"
PYTHON = "/usr/bin/python3"

DRIVER = Path(__file__).resolve().parent / "_sandbox_nonroot_driver.py"


def _usable() -> bool:
    if os.geteuid() != 0 or not available() or not os.access(PYTHON, os.X_OK) or not shutil.which("setpriv"):
        return False
    probe = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "test",
            "-r",
            str(SOURCE / "sandbox" / "_worker.py"),
        ],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.skipif(
    not _usable(), reason="needs root, /usr/bin/python3, setpriv and a checkout readable by 65534"
)
def test_the_sandbox_works_for_an_ordinary_user() -> None:
    done = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            PYTHON,
            "-I",
            str(DRIVER),
            str(SOURCE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["correct"] == ["passed", "65534"]
    assert out["caps"] == "0000000000000000"
    assert out["usr"] == "failed"
    assert 0 <= out["forks"] < 8  # RLIMIT_NPROC holds in the user namespace (init and worker count too)
    assert out["judged"] == "passed"
    assert "userns" in out["isolation"] and "seccomp" in out["isolation"]
