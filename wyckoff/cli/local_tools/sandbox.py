"""Landlock write confinement, run as a script in front of every approved command:

    python -I -S sandbox.py WRITABLE_DIR... -- PROGRAM ARGS...

It forbids writing anywhere except the given folders (and /dev/null), then replaces itself
with PROGRAM; the rule holds for every process PROGRAM starts. Reading, running programs
and the network are not confined. Exit code 111 with one line on stderr when the kernel
has no Landlock (shell.py checks `landlock_abi()` first and says so before running).
Only the standard library: this runs before every command and must start fast.
"""

from __future__ import annotations

import ctypes
import os
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # same on x86-64 and arm64
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
UNSUPPORTED_EXIT = 111

WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE_ANY = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14  # Landlock ABI 2 and 3


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (old kernel or disabled)."""
    version = _libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(version, 0)


def write_rights(abi: int) -> int:
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_ANY
    return rights | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)


def confine_writes(writable: list[str]) -> None:
    """From now on this process and its children may write only under `writable`."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("内核不支持 Landlock")
    handled = write_rights(abi)
    attr = ctypes.c_uint64(handled)  # struct landlock_ruleset_attr, first field only
    ruleset = _libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    for path in writable:
        file_only = WRITE_FILE | (TRUNCATE if abi >= 3 else 0)
        _allow(ruleset, path, handled if os.path.isdir(path) else file_only)
    _allow(ruleset, "/dev/null", WRITE_FILE | (TRUNCATE if abi >= 3 else 0))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
    if _libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = PathBeneath(rights, fd)
        if _libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    split = argv.index("--")
    writable, program = argv[:split], argv[split + 1 :]
    try:
        confine_writes(writable)
    except OSError as exc:
        sys.stderr.write(f"无法启用 Landlock 写入限制：{exc}\n")
        sys.exit(UNSUPPORTED_EXIT)
    os.execvp(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
