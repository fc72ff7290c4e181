"""Run by tests/test_sandbox_nonroot.py as an ordinary user: the sandbox package alone (standard library
only, imported from the checkout given as argv[1]), a few programs, a JSON line of what happened."""

from __future__ import annotations

import json
import sys

sys.path.insert(0, sys.argv[1])

from sandbox import Limits, Program, open_sandbox  # type: ignore[import-not-found]  # noqa: E402

FORKS = """import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
except OSError:
    print(n)
"""


def check(candidate) -> None:  # noqa: ANN001
    assert candidate(2, 3) == 5


def main() -> None:
    box = open_sandbox(1)
    out: dict[str, object] = {}
    r = box.run_sync(
        Program("import os, json, decimal, sqlite3\nprint(os.getuid())\nopen('x', 'w').write('y')")
    )
    out["correct"] = [r.status, r.stdout.strip()]
    r = box.run_sync(Program("print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])"))
    out["caps"] = r.stdout.strip()
    out["usr"] = box.run_sync(Program("open('/usr/escaped', 'w')")).status
    out["forks"] = int(box.run_sync(Program(FORKS), Limits(timeout_s=3)).stdout.strip() or -1)
    out["judged"] = box.run_sync(
        Program("def add(a, b):\n    return a + b\n", "add", None), check=check
    ).status
    out["isolation"] = box.isolation
    box.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
