"""The file system an approved command sees inside bubblewrap: an allowlist, nothing else.

bwrap starts from an empty root; these mounts put back, in order (a later mount goes over an
earlier one), and the root itself is read-only:

1. empty, writable tmpfs where daemons keep their sockets on the host: /tmp (the command's
   private temp folder), /var/tmp, /run, /dev/shm and the user's home;
2. read-only: the system's programs and libraries (/usr, /bin, /sbin, /lib*), the entries of
   /etc that programs need (ETC_ENTRIES; resolv.conf only with the network), the interpreter's
   and confine.py's folders (the launcher runs again inside);
3. writable: the workspace and the exports folder;
4. inside those again: WYCKOFF_HOME and key files hidden, the workspace's .git/hooks and
   .git/config read-only.

A read-only bind does not stop connect() on a Unix socket in it (connect checks the socket
file's permission bits, not the mount), so every path-reachable socket outside these folders
is gone, and no broad tree of the host (/, /var, /etc, the home) is bound. A socket inside the
workspace or the interpreter's folders stays reachable: those are the user's choice.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

from wyckoff.cli.local_tools.key_files import key_paths_in
from wyckoff.cli.local_tools.workspace import exports_dir, home_dir, workspace_root

CONFINE_SCRIPT = Path(__file__).with_name("confine.py")
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs read in /etc: the dynamic linker, user and host names, time zone, Debian's
# program alternatives, TLS certificates (not private keys), file types, the system settings
# of git, Python, Java and Perl. Not: shadow, sudoers, ssh, cron, the package manager's.
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "gai.conf",
    "services",
    "protocols",
    "networks",
    "localtime",
    "timezone",
    "locale.alias",
    "locale.conf",
    "alternatives",
    "ssl/certs",  # not ssl/private: the host's private keys
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "pki/ca-trust",
    "pki/tls/certs",
    "pki/tls/cert.pem",
    "pki/tls/openssl.cnf",
    "crypto-policies",
    "mime.types",
    "magic",
    "magic.mime",
    "os-release",
    "lsb-release",
    "debian_version",
    "inputrc",
    "terminfo",
    "gitconfig",
    "fonts",
    "matplotlibrc",
    "python3*",
    "java-*",
    "perl",
)
NETWORK_ETC_ENTRIES = ("resolv.conf",)


def mount_arguments(temp_dir: str, network: bool) -> list[str]:
    """bwrap's mounts, in order: later mounts go over earlier ones."""
    root, exports = workspace_root(), exports_dir()
    args = ["--dev", "/dev", "--proc", "/proc", *socket_places(temp_dir)]
    args += system_folders() + etc_entries(network)
    for path in launcher_paths():
        args += ["--ro-bind", path, path]
    args += ["--bind", str(root), str(root)]
    if home_dir().is_dir():
        args += ["--tmpfs", str(home_dir())]  # when inside the workspace
    args += ["--bind", str(exports), str(exports)]
    for path in hidden_key_paths(root):
        args += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
    return args + git_protected(root) + ["--remount-ro", "/"]


def socket_places(temp_dir: str) -> list[str]:
    """Empty folders over every place a daemon's socket can live."""
    args = ["--bind", temp_dir, "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run"]
    args += ["--tmpfs", "/dev/shm"]
    home = os.path.realpath(Path.home())
    return args + (["--tmpfs", home] if home != "/" else [])


def system_folders() -> list[str]:
    """/usr and the top-level folders of programs and libraries, read-only; those that are
    links into /usr (a merged /usr) made as the same links."""
    args: list[str] = []
    for path in SYSTEM_FOLDERS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def etc_entries(network: bool) -> list[str]:
    """The entries of /etc programs need, read-only (a link is followed: resolv.conf is
    often a link into /run)."""
    args: list[str] = []
    for entry in ETC_ENTRIES + (NETWORK_ETC_ENTRIES if network else ()):
        for path in sorted(glob.glob(os.path.join("/etc", entry))):
            args += ["--ro-bind-try", path, path]
    return args


def launcher_paths() -> list[str]:
    """This interpreter's folders (the virtualenv and the Python it was made from) and
    confine.py's: the launcher runs again inside bwrap, and commands run this Python.
    Folders under /usr are there already."""
    wanted = {sys.prefix, sys.base_prefix, os.path.dirname(sys.executable)}
    wanted |= {os.path.dirname(os.path.realpath(sys.executable)), str(CONFINE_SCRIPT.parent)}
    wanted |= {os.path.realpath(path) for path in wanted}
    folders = [Path(path) for path in wanted if os.path.isdir(path) and path != "/"]  # never all
    return sorted(
        str(path)
        for path in folders
        if not any(path.is_relative_to(system) for system in SYSTEM_FOLDERS)
        and not any(path != other and path.is_relative_to(other) for other in folders)
    )


def hidden_key_paths(root: Path) -> list[str]:
    """The real paths of the key files in the user's home and at the top of the workspace,
    where the sandbox shows them (the workspace, which may be the home)."""
    found = {os.path.realpath(path) for path in key_paths_in(Path.home()) + key_paths_in(root)}
    shown = (path for path in found if Path(path).is_relative_to(root))
    return sorted(path for path in shown if os.path.exists(path))  # no mount on a dangling link


def git_protected(root: Path) -> list[str]:
    """The workspace's .git bound onto itself (a mount point cannot be renamed away and
    replaced), its hooks folder (and core.hooksPath's, when in the workspace) and config
    read-only: what a command wrote there would run outside the sandbox the next time the
    user runs git. A .git file (a linked worktree, a submodule) is read-only, so it cannot
    be swapped for a folder of hooks."""
    git = root / ".git"
    if git.is_symlink() or not git.exists():
        return []
    if not git.is_dir():
        return ["--ro-bind", str(git), str(git)]
    args = ["--bind", str(git), str(git)]
    for path in (git / "config", git / "config.worktree"):
        args += read_only_in(root, path)
    for folder in sorted({git / "hooks", *hooks_path(root)}):
        args += read_only_in(root, folder, make_folder=True)
    return args


def read_only_in(root: Path, path: Path, make_folder: bool = False) -> list[str]:
    """`path` read-only where it lies in the workspace; a missing folder made as an empty,
    read-only one (or a command could create it and fill it)."""
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root):
        return []  # outside the workspace: read-only or not there at all
    if real.exists():
        return ["--ro-bind", str(real), str(real)]
    return ["--tmpfs", str(real), "--remount-ro", str(real)] if make_folder else []


def hooks_path(root: Path) -> list[Path]:
    """Where git's core.hooksPath setting points (husky's .husky/_, say), as git reads it."""
    command = ["git", "-C", str(root), "config", "--type=path", "--get", "core.hooksPath"]
    try:
        found = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    value = found.stdout.strip()
    return [root / value] if found.returncode == 0 and value else []
