"""The seccomp filter bubblewrap installs in the sandbox: a short deny list, compiled to classic BPF here.

Namespaces already decide what a program can see; the filter closes the ways a program could get new
privileges inside them or reach the trusted worker next to it. Refused with ``EPERM``: creating or
joining namespaces (``unshare``, ``setns``, ``clone`` with any ``CLONE_NEW*`` flag: a new user
namespace would give the program capabilities, hence its own uncapped tmpfs), mounting (``mount``,
``umount2``, ``pivot_root``, ``chroot``, the new mount API), ``ptrace`` and
``process_vm_readv/writev``, ``bpf``, ``userfaultfd``, ``perf_event_open``, io_uring, keyrings,
loading kernels or modules, ``acct``, ``swapon``, ``reboot``, ``sethostname``. ``clone3`` answers
``ENOSYS`` (its flags sit in memory a filter cannot read) so that the C library falls back to
``clone``, whose flags it can. Other architectures' system-call numbers (x32 on x86-64, or a foreign
``AUDIT_ARCH``) are refused. Written for x86-64 and aarch64; elsewhere :func:`filter_program` returns
None and the sandbox records ``seccomp`` as absent.
"""

from __future__ import annotations

import errno
import platform
import struct

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_KILL_PROCESS = 0x80000000

#: Every CLONE_NEW* flag that ``clone`` accepts (CLONE_NEWTIME only exists for clone3/unshare).
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

_DENIED = [
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "userfaultfd",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "sethostname",
    "setdomainname",
    "open_by_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
]

#: (AUDIT_ARCH, clone, clone3, {name: number}) per machine.
_TABLES: dict[str, tuple[int, int, int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        56,
        435,
        {
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "bpf": 321,
            "userfaultfd": 323,
            "perf_event_open": 298,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "kexec_load": 246,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "acct": 163,
            "swapon": 167,
            "swapoff": 168,
            "reboot": 169,
            "sethostname": 170,
            "setdomainname": 171,
            "open_by_handle_at": 304,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
        },
    ),  # fmt: skip
    "aarch64": (
        0xC00000B7,
        220,
        435,
        {
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "bpf": 280,
            "userfaultfd": 282,
            "perf_event_open": 241,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "kexec_load": 104,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "acct": 89,
            "swapon": 224,
            "swapoff": 225,
            "reboot": 142,
            "sethostname": 161,
            "setdomainname": 162,
            "open_by_handle_at": 265,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
        },
    ),  # fmt: skip
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes | None:
    """The filter as the bytes of a ``sock_filter`` array (what ``bwrap --seccomp FD`` reads)."""
    table = _TABLES.get(machine or platform.machine())
    if table is None:
        return None
    arch, clone, clone3, numbers = table
    eperm = _ERRNO | errno.EPERM
    ops = [
        _op(_LD_W_ABS, 4),  # seccomp_data.arch
        _op(_JEQ_K, arch, 1, 0),
        _op(_RET_K, _KILL_PROCESS),
        _op(_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    if arch == 0xC000003E:  # x32 system calls share the architecture value, with bit 30 set
        ops += [_op(_JGE_K, 0x40000000, 0, 1), _op(_RET_K, eperm)]
    for name in _DENIED:
        ops += [_op(_JEQ_K, numbers[name], 0, 1), _op(_RET_K, eperm)]
    ops += [_op(_JEQ_K, clone3, 0, 1), _op(_RET_K, _ERRNO | errno.ENOSYS)]
    ops += [
        _op(_JEQ_K, clone, 0, 3),
        _op(_LD_W_ABS, 16),  # the low 32 bits of args[0] (little-endian): the clone flags
        _op(_JSET_K, CLONE_NEW_FLAGS, 0, 1),
        _op(_RET_K, eperm),
        _op(_RET_K, _ALLOW),
    ]
    return b"".join(ops)
