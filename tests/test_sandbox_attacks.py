"""Hostile programs in the real sandbox: each attack is tried as an attacker would, and the harm is checked
on the host (a file, a read secret, memory held, a connection, a process alive, a forged pass).

Where the harm is safe to cause, the same program also runs on the ``--unsafe-local-exec`` backend and
does cause it there: the check can see the harm, so its absence under bubblewrap means something.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import socket
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmpsych.collab.datasets import load_items
from llmpsych.collab.scoring import check_humaneval, official_digests
from llmpsych.collab.systems.selfcollab import SelfCollab
from llmpsych.sandbox import Limits, Program, SandboxResult, open_sandbox
from llmpsych.sandbox._pool import WorkerSandbox

pytestmark = pytest.mark.usefixtures("bubblewrap")

LIMITS = Limits(timeout_s=3.0, cpu_s=3)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[WorkerSandbox]:
    box = open_sandbox(2, LIMITS)
    yield box
    box.close()


@pytest.fixture(scope="module")
def unsafe() -> Iterator[WorkerSandbox]:
    box = open_sandbox(1, LIMITS, unsafe=True)
    yield box
    box.close()


def run(box: WorkerSandbox, source: str, limits: Limits = LIMITS) -> SandboxResult:
    return box.run_sync(Program(source), limits)


# -- a correct program passes (the control) ----------------------------------------------------------
def test_a_correct_program_passes_and_an_error_fails(sandbox: WorkerSandbox) -> None:
    ok = run(
        sandbox, "import json, math, collections\nprint(json.dumps([math.pi]))\nopen('f', 'w').write('x')"
    )
    assert ok.passed and ok.stdout.startswith("[3.14159")
    bad = run(sandbox, "assert 1 == 2")
    assert bad.status == "failed" and "AssertionError" in bad.stderr


# -- writing outside -----------------------------------------------------------------------------------
ESCAPES = """import os
target = {target!r}
attempts = {{}}
def attempt(name, action):
    try:
        action()
        attempts[name] = "ok"
    except Exception as exc:
        attempts[name] = type(exc).__name__
attempt("open", lambda: open(target, "w").write("x"))
attempt("makedirs", lambda: (os.makedirs(os.path.dirname(target), exist_ok=True),
                            open(target, "w").write("x")))
root = os.open("/", os.O_RDONLY)
attempt("dir_fd", lambda: os.write(os.open(target.lstrip("/"), os.O_CREAT | os.O_WRONLY, dir_fd=root), b"x"))
attempt("proc_root", lambda: open("/proc/1/root" + target, "w").write("x"))
attempt("symlink", lambda: (os.symlink(target, "link"), open("link", "w").write("x")))
attempt("hardlink", lambda: (os.link({victim!r}, "hard"), open("hard", "w").write("x")))
attempt("usr", lambda: open("/usr/llmpsych-escaped", "w").write("x"))
attempt("root", lambda: open("/llmpsych-escaped", "w").write("x"))
print("ATTEMPTS", __import__("json").dumps(attempts))
"""


def _escape_program(tmp_path: Path) -> tuple[str, Path, Path]:
    target = tmp_path / "escaped.txt"
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    return ESCAPES.format(target=str(target), victim=str(victim)), target, victim


def test_writes_outside_do_not_reach_the_host(sandbox: WorkerSandbox, tmp_path: Path) -> None:
    source, target, victim = _escape_program(tmp_path)
    result = run(sandbox, source)
    attempts = json.loads(result.stdout.split("ATTEMPTS ", 1)[1])
    assert not target.exists()
    assert victim.read_text() == "original"
    assert not Path("/usr/llmpsych-escaped").exists() and not Path("/llmpsych-escaped").exists()
    # The sandbox's own root, /usr and the bound folders are read-only; the host's folders do not exist.
    assert attempts["usr"] == attempts["root"] == "OSError"
    assert attempts["hardlink"] == "FileNotFoundError"


def test_the_escape_check_sees_a_write_without_isolation(unsafe: WorkerSandbox, tmp_path: Path) -> None:
    source, target, _ = _escape_program(tmp_path)
    # only the write into this test's folder: the others would really write into the host's / and /usr
    source = "\n".join(line for line in source.splitlines() if '"usr"' not in line and '"root"' not in line)
    run(unsafe, source)
    assert target.exists()  # the same program, unisolated, did write: the check above can fail


# -- reading secrets -----------------------------------------------------------------------------------
SNOOP = """import os
found, read = [], 0
def look(text):
    global read
    read += 1
    for line in text.splitlines():
        if "sk-" in line or "api_key" in line or "KEY" in line:
            found.append(line[:200])
for path in {paths!r}:
    try:
        look(open(path, errors="replace").read())
    except Exception as exc:
        found.append(path + " " + type(exc).__name__)
look("\\n".join("%s=%s" % kv for kv in os.environ.items()))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            look(open("/proc/%s/environ" % pid, errors="replace").read().replace("\\0", "\\n"))
        except Exception:
            pass
seen = set()
for top in {tops!r}:
    for folder, dirs, files in os.walk(top):
        if folder in seen:  # "/" already walked "/tmp", "/work", ...: each folder is read once
            dirs[:] = []
            continue
        seen.add(folder)
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/usr", "/proc", "/sys", "/dev")]
        for name in files:
            try:
                with open(os.path.join(folder, name), errors="replace") as f:
                    look(f.read(1 << 16))
            except Exception:
                pass
print("READ", read)
print("\\n".join(found))
"""


TOPS = ("/", "/tmp", "/home", "/root", "/etc", "/work", "/var")
# Reading every file of the bound interpreter (a venv with all extras: ~40k files) took 18 s on an idle
# machine and over 30 s under CI's load: the bound is generous, the test is about what is seen, not speed.
SLOW = Limits(timeout_s=180, cpu_s=120)


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """A fake home with a user config holding a canary key, and the same canary in the environment."""
    canary = "sk-canary-" + secrets.token_hex(12)
    home = tmp_path / "home"
    config = home / ".config" / "llmpsych" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[endpoints.x]\napi_key = "{canary}"\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.setenv("LLMPSYCH_CONFIG", str(config))
    paths = [str(config), os.path.expanduser("~/.config/llmpsych/config.toml"), "/proc/1/environ"]
    return canary, paths


def test_a_program_cannot_read_planted_secrets(planted: tuple[str, list[str]]) -> None:
    canary, paths = planted
    box = open_sandbox(1, LIMITS)  # started after the secrets were planted in this process
    try:
        result = run(box, SNOOP.format(paths=paths, tops=TOPS), SLOW)
    finally:
        box.close()
    assert result.passed, result.stderr[-500:]
    assert canary not in result.stdout + result.stderr
    assert int(result.stdout.split()[1]) > 100  # it did read files: the sandbox's own


def test_the_snoop_finds_the_secret_without_isolation(planted: tuple[str, list[str]]) -> None:
    canary, paths = planted
    box = open_sandbox(1, LIMITS, unsafe=True)
    try:
        result = run(box, SNOOP.format(paths=paths[:2], tops=()))  # no walk through the host's files
    finally:
        box.close()
    assert canary in result.stdout


def test_self_collab_tester_output_carries_no_secret(planted: tuple[str, list[str]]) -> None:
    # The tester forwards the program's output to the model by design; nothing secret is reachable.
    canary, paths = planted
    box = open_sandbox(1, SLOW)
    try:
        rt = types.SimpleNamespace(sandbox=box)
        code = SNOOP.format(paths=paths, tops=TOPS)
        output = asyncio.run(SelfCollab._execute(rt, "task", code))  # type: ignore[arg-type]
    finally:
        box.close()
    assert output.startswith("[passed]") and canary not in output


# -- memory through fork -------------------------------------------------------------------------------
FORK_MEMORY = """import os, time
r, w = os.pipe()
children = 0
for _ in range(64):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        held, chunks = 0, []
        try:
            while True:
                chunks.append(bytearray(8 << 20))
                held += 8
        except MemoryError:
            pass
        os.write(w, b"%d\\n" % held)
        time.sleep(30)
        os._exit(0)
    children += 1
time.sleep(1.5)
os.close(w)
data = b""
while True:
    chunk = os.read(r, 4096)
    if not chunk:
        break
    data += chunk
    if data.count(b"\\n") >= children:
        break
print("CHILDREN", children, "HELD_MIB", sum(int(x) for x in data.split()))
"""


def test_forked_children_cannot_hold_more_than_the_memory_bound(sandbox: WorkerSandbox) -> None:
    limits = Limits(timeout_s=5.0, cpu_s=5, memory_bytes=512 << 20, nproc=4)
    result = run(sandbox, FORK_MEMORY, limits)
    fields = result.stdout.split()
    children, held = int(fields[1]), int(fields[3])
    assert children <= limits.nproc - 1  # the program's own process counts too
    assert held * (1 << 20) <= limits.memory_bytes
    assert held > 0


# -- disk: many small files, one big file --------------------------------------------------------------
DISK_FILL = """import os
count = total = 0
try:
    while True:
        with open("f%d" % count, "wb") as f:
            f.write(b"x" * 65536)
        count += 1
        total += 65536
except OSError as exc:
    print("STOPPED", type(exc).__name__)
print("FILES", count, "BYTES", total)
"""


def test_the_scratch_is_capped_and_emptied_after_each_execution(sandbox: WorkerSandbox) -> None:
    limits = Limits(scratch_bytes=8 << 20)
    fill = run(sandbox, DISK_FILL, limits)
    total = int(fill.stdout.split("BYTES ")[1].split()[0])
    assert "STOPPED" in fill.stdout and total <= limits.scratch_bytes
    after = run(sandbox, "import os\nprint(sorted(os.listdir('/tmp')), os.statvfs('/tmp').f_bfree)", limits)
    assert after.stdout.startswith("['run']")  # only the new execution's own, empty folder
    big = run(sandbox, "open('big', 'wb').write(b'x' * (4 << 20))", Limits(file_bytes=1 << 20))
    assert not big.passed


def test_empty_files_are_bounded_by_time_and_removed(sandbox: WorkerSandbox) -> None:
    # Inodes are not capped (bubblewrap cannot pass nr_inodes); they only last until the execution ends.
    source = (
        "import os\nn = 0\ntry:\n    while True:\n        os.mknod('e%d' % n)\n        n += 1\n"
        "except OSError:\n    pass\n"
    )
    result = run(sandbox, source, Limits(timeout_s=1.0, cpu_s=2))
    assert result.status == "timeout"
    after = run(sandbox, "import os\nprint(len(os.listdir('/tmp/run')), len(os.listdir('/tmp')))")
    assert after.stdout.split() == ["0", "1"]


# -- network -------------------------------------------------------------------------------------------
@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A real TCP server on the host's loopback that records every connection it receives."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            seen.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


NETWORK = """import socket
for host in ("127.0.0.1", "10.0.0.1", "1.1.1.1"):
    try:
        s = socket.create_connection((host, {port}), timeout=1)
        s.sendall(b"leak")
        print("CONNECTED", host)
    except OSError as exc:
        print("REFUSED", host, type(exc).__name__)
"""


def test_no_connection_leaves_the_sandbox(sandbox: WorkerSandbox, listener: tuple[int, list[bytes]]) -> None:
    port, seen = listener
    result = run(sandbox, NETWORK.format(port=port), Limits(timeout_s=6, cpu_s=4))
    time.sleep(0.3)
    assert seen == [] and "CONNECTED" not in result.stdout
    assert result.stdout.count("REFUSED") == 3


def test_the_listener_sees_a_connection_without_isolation(
    unsafe: WorkerSandbox, listener: tuple[int, list[bytes]]
) -> None:
    port, seen = listener
    run(unsafe, NETWORK.format(port=port).replace('"10.0.0.1", "1.1.1.1"', ""), Limits(timeout_s=6, cpu_s=4))
    time.sleep(0.3)
    assert seen == [b"leak"]


# -- nothing outlives its execution --------------------------------------------------------------------
DAEMON = """import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import ctypes
        ctypes.CDLL(None).prctl(15, {name!r}.encode(), 0, 0, 0)  # PR_SET_NAME
        for fd in (0, 1, 2):
            os.close(fd)
        time.sleep(3600)
    os._exit(0)
time.sleep(0.3)
{tail}
"""


def _alive_named(name: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and Path(f"/proc/{pid}/comm").read_text().strip() == name:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("tail", ["", "while True:\n    pass"], ids=["ends", "times-out"])
def test_no_process_is_left_alive(sandbox: WorkerSandbox, tail: str) -> None:
    name = "llmps" + secrets.token_hex(4)  # a comm is at most 15 characters
    started = time.monotonic()
    result = run(sandbox, DAEMON.format(name=name, tail=tail), Limits(timeout_s=1.5, cpu_s=3))
    assert time.monotonic() - started < 1.5 + 3  # a containment bound, not a performance figure
    assert result.status == ("passed" if not tail else "timeout")
    assert _alive_named(name) == []


def test_the_program_cannot_signal_the_worker(sandbox: WorkerSandbox) -> None:
    parent = run(sandbox, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    assert parent.status == "failed" and "PermissionError" in parent.stderr
    everyone = run(sandbox, "import os\nos.kill(-1, 9)\nprint('still here')")  # all it may signal: itself
    assert everyone.passed and everyone.stdout == "still here\n"
    assert run(sandbox, "print('next')").passed


def test_escaping_the_namespaces_is_refused(sandbox: WorkerSandbox) -> None:
    source = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000 | 0x00020000), ctypes.get_errno())
print("ptrace", libc.ptrace(16, 1, 0, 0), ctypes.get_errno())
print("uid", os.getuid(), open("/proc/self/status").read().split("CapEff:")[1].split()[0])
"""
    out = run(sandbox, source).stdout.split("\n")
    assert out[0] == "unshare -1 1" and out[1] == "ptrace -1 1"  # EPERM from the seccomp filter
    assert out[2].split()[2] == "0000000000000000"  # no capability at all


# -- forged passes -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def problem(seed_data: Path) -> dict:
    return load_items("humaneval", seed_data)[0].reference  # has_close_elements


@pytest.fixture(scope="module")
def official(seed_data: Path) -> frozenset[str]:
    return official_digests(seed_data)


FORGERIES = {
    "early os._exit(0)": "import os\nos._exit(0)\n",
    "early sys.exit(0)": "import sys\nsys.exit(0)\n",
    "always-equal object": (
        "class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
        "def has_close_elements(numbers, threshold):\n    return Yes()\n"
    ),
    "int subclass that lies": (
        "class Liar(int):\n    def __eq__(self, other):\n        return True\n"
        "def has_close_elements(numbers, threshold):\n    return Liar(0)\n"
    ),
    "patched builtins and AssertionError": (
        "import builtins\nbuiltins.AssertionError = type('N', (Exception,), {})\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.abs = lambda x: 0\n"
        "def has_close_elements(numbers, threshold):\n    return None\n"
    ),
    "frame walking for expected values": (
        "import sys, gc\ndef has_close_elements(numbers, threshold):\n"
        "    f, seen = sys._getframe(), []\n    while f:\n"
        "        seen.append(f.f_locals)\n        f = f.f_back\n"
        "    texts = [o for o in gc.get_objects() if isinstance(o, str) and 'assert candidate' in o]\n"
        "    return bool(texts) and 'True' in texts[0]\n"
    ),
    "fake markers and protocol frames": (
        "import os, json\nprint('passed')\nprint('#done-' + 'f' * 32)\n"
        "body = json.dumps({'loaded': True}).encode()\nos.write(3, len(body).to_bytes(4, 'big') + body)\n"
        "def has_close_elements(numbers, threshold):\n    return False\n"
    ),
    "killing the worker": "import os\nos.kill(os.getppid(), 9)\n",
    "patching the child's codec": (
        "import sys\ncodec = sys.modules['_codec']\ncodec.encode = lambda v: ['b', True]\n"
        "def has_close_elements(numbers, threshold):\n    return 'wrong'\n"
    ),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_wrong_program_cannot_forge_a_pass(
    sandbox: WorkerSandbox, problem: dict, official: frozenset[str], name: str
) -> None:
    result = asyncio.run(check_humaneval(problem, FORGERIES[name] + "\n", sandbox, official=official))
    assert result.extra["judge"] == "trusted"
    assert not result.passed, result


def test_the_same_check_passes_the_right_program(
    sandbox: WorkerSandbox, problem: dict, official: frozenset[str]
) -> None:
    right = asyncio.run(check_humaneval(problem, problem["canonical_solution"], sandbox, official=official))
    assert right.passed and right.calls == 7


def test_an_always_equal_object_is_reported_with_both_figures(
    sandbox: WorkerSandbox, problem: dict, official: frozenset[str]
) -> None:
    # OpenAI's harness (tests inside the program) counts the lying object as a pass; llmpsych does not,
    # and records the reference verdict so that both figures can be reported.
    result = asyncio.run(
        check_humaneval(problem, FORGERIES["always-equal object"], sandbox, official=official)
    )
    assert not result.passed and result.detail.startswith("CodecError")
    assert result.extra["reference_passed"] is True


def test_a_check_that_swallows_errors_still_fails_a_program_that_dies(sandbox: WorkerSandbox) -> None:
    def forgiving(candidate) -> None:  # noqa: ANN001 - a test written carelessly: it catches everything
        for n in range(3):
            with contextlib.suppress(Exception):
                assert candidate(n) == n * 2

    dies = Program("import os\ndef double(n):\n    os._exit(0)\n", "double", None)
    result = sandbox.run_sync(dies, LIMITS, forgiving)
    assert not result.passed and result.detail == "the program ended before answering"
    right = sandbox.run_sync(Program("def double(n):\n    return 2 * n\n", "double", None), LIMITS, forgiving)
    assert right.passed and right.calls == 3


def test_output_is_capped_at_the_file_limit(sandbox: WorkerSandbox) -> None:
    # stdout and stderr are in-memory files under RLIMIT_FSIZE: a flood stops at 1 MiB, never blocks
    flood = run(sandbox, "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 100000)\n")
    assert flood.status == "failed" and "File too large" in flood.stderr
    assert len(flood.stdout) <= LIMITS.max_output + 20


# -- a hostile data folder -----------------------------------------------------------------------------
def test_tests_from_an_unverified_data_folder_never_run_outside(
    seed_data: Path, tmp_path: Path, sandbox: WorkerSandbox
) -> None:
    # A received data folder whose HumanEval test writes a file: it does not match the pinned release, so
    # its tests run in a sandbox of their own (the write fails there), not in llmpsych's process; the
    # program is still judged from outside its own sandbox.
    target = tmp_path / "written-by-a-test.txt"
    folder = tmp_path / "data" / "MAS-Resilience" / "benchmarks"
    folder.mkdir(parents=True)
    rows = [json.loads(line) for line in (seed_data / "MAS-Resilience/benchmarks/HumanEval.jsonl").open()]
    original = rows[0]["test"]
    rows[0]["test"] = f"open({str(target)!r}, 'w').write('x')\n" + original
    (folder / "HumanEval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    hostile = load_items("humaneval", tmp_path / "data")[0].reference
    official = official_digests(tmp_path / "data")
    assert official == frozenset()
    result = asyncio.run(check_humaneval(hostile, hostile["canonical_solution"], sandbox, official=official))
    assert result.extra["judge"] == "sandboxed"
    assert not target.exists()
    assert not result.passed and "FileNotFoundError" in result.detail  # the folder is not in the sandbox
    # the same tests, unchanged but unverified, judge a right and a forging program from outside them
    rows[0]["test"] = "\n" + original  # the same tests, one newline more
    (folder / "HumanEval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    official_digests.cache_clear()
    plain = load_items("humaneval", tmp_path / "data")[0].reference
    assert official_digests(tmp_path / "data") == frozenset()
    right = asyncio.run(check_humaneval(plain, plain["canonical_solution"], sandbox))
    assert right.passed and right.extra["judge"] == "sandboxed" and right.calls == 7
    for forgery in ("always-equal object", "early os._exit(0)", "fake markers and protocol frames"):
        forged = asyncio.run(check_humaneval(plain, FORGERIES[forgery], sandbox))
        assert not forged.passed, forgery
    # the official file's problems stay trusted
    assert len(official_digests(seed_data)) == 164
