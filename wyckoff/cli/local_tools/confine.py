"""The launcher every approved command starts through, run as a script:

    python -I -S confine.py [--cgroup DIR] [--cpu S --memory BYTES --processes N]
                            [--landlock] [--no-network] [--write DIR]... -- PROGRAM ARGS...

In this order it joins the process-count cgroup DIR (when given), sets the resource limits
(CPU seconds per process, address space per process, processes) when given, and with --landlock
confines itself with Landlock: writes only under the --write folders (and /dev/null), no
signals to processes outside the sandbox and no abstract Unix sockets (Landlock ABI 6), no
TCP with --no-network (ABI 4). Then it replaces itself with PROGRAM (bwrap, or the shell in
the Landlock fallback); every limit holds for every process PROGRAM starts.
Exit code 111 with one line on stderr when a limit cannot be set.
Only the standard library: this runs before every command and must start fast.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # same on x86-64 and arm64
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
UNSUPPORTED_EXIT = 111

WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE_ANY = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14  # Landlock ABI 2 and 3
ABI_NETWORK, ABI_SCOPES = 4, 6
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


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


def ruleset_attr(abi: int, network: bool) -> tuple[RulesetAttr, int]:
    """What the ruleset handles (everything handled and not allowed is denied), and the
    size of the struct this kernel knows."""
    attr = RulesetAttr(write_rights(abi), 0, 0)
    size = 8
    if abi >= ABI_NETWORK:
        attr.handled_access_net = 0 if network else NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= ABI_SCOPES:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    return attr, size


def confine(writable: list[str], network: bool) -> None:
    """From now on this process and its children may write only under `writable`."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("内核不支持 Landlock")
    attr, size = ruleset_attr(abi, network)
    ruleset = _libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    file_only = WRITE_FILE | (TRUNCATE if abi >= 3 else 0)
    for path in writable:
        _allow(ruleset, path, attr.handled_access_fs if os.path.isdir(path) else file_only)
    _allow(ruleset, "/dev/null", file_only)
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


def user_process_count() -> int:
    """How many processes this user runs now (RLIMIT_NPROC counts them all, not only ours)."""
    uid = os.getuid()
    count = 0
    for name in os.listdir("/proc"):
        try:
            count += name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid
        except OSError:  # exited while we looked
            continue
    return count


def set_limits(cpu_s: int, memory: int, processes: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    allowed = user_process_count() + processes  # root ignores this one: the cgroup bounds it
    resource.setrlimit(resource.RLIMIT_NPROC, (allowed, allowed))


def parse(argv: list[str]) -> tuple[dict, list[str]]:
    split = argv.index("--")
    options: dict = {"write": [], "landlock": False, "no-network": False, "cgroup": None}
    words = iter(argv[:split])
    for word in words:
        name = word.removeprefix("--")
        if name in ("landlock", "no-network"):
            options[name] = True
        elif name == "write":
            options["write"].append(next(words))
        else:
            options[name] = next(words)
    return options, argv[split + 1 :]


def main(argv: list[str]) -> None:
    options, program = parse(argv)
    try:
        if options["cgroup"]:
            with open(os.path.join(options["cgroup"], "cgroup.procs"), "w") as procs:
                procs.write(str(os.getpid()))
        if "cpu" in options:
            set_limits(int(options["cpu"]), int(options["memory"]), int(options["processes"]))
        if options["landlock"]:
            confine(options["write"], network=not options["no-network"])
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"无法启用命令沙箱的限制：{exc}\n")
        sys.exit(UNSUPPORTED_EXIT)
    os.execvp(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
