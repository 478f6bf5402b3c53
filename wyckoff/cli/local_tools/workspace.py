"""The workspace: the one folder tree (plus WYCKOFF_HOME's exports folder) local tools touch.

The root is `--workspace DIR`, else WYCKOFF_WORKSPACE, else the directory wyckoff started
in. A path is resolved with realpath (every symlink followed) and compared with the allowed
roots by path components. Refused: `..`, anything outside the roots (also through a
symlink), WYCKOFF_HOME's own state, files that may hold keys (key_files.py), and — once opened — anything
that is not a regular file or has more than one hard link (a hard link can point outside).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from wyckoff.cli.local_tools.key_files import key_file_entry
from wyckoff.cli.tools import ToolFailure
from wyckoff.errors import os_error_cause

WORKSPACE_ENV = "WYCKOFF_WORKSPACE"
EXPORTS_DIR = "exports"
DIRECTORY_NO_LINKS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_KINDS = (
    (stat.S_ISDIR, "是目录，不是文件"),
    (stat.S_ISFIFO, "是命名管道（FIFO），读写它可能永远等待"),
    (stat.S_ISCHR, "是字符设备文件"),
    (stat.S_ISBLK, "是块设备文件"),
    (stat.S_ISSOCK, "是套接字文件"),
)


def workspace_root() -> Path:
    """The workspace root, resolved; a clear error when the configured one is not a folder."""
    configured = os.environ.get(WORKSPACE_ENV)
    root = Path(os.path.realpath(os.path.expanduser(configured or os.getcwd())))
    if not root.is_dir():
        raise ToolFailure(
            f"工作区 {configured} 不是一个存在的文件夹：请用 --workspace 指定一个文件夹。"
        )
    return root


def home_dir() -> Path:
    home = os.environ.get("WYCKOFF_HOME") or str(Path.home() / ".wyckoff")
    return Path(os.path.realpath(os.path.expanduser(home)))


def exports_dir() -> Path:
    return home_dir() / EXPORTS_DIR


def allowed_roots() -> tuple[Path, Path]:
    return workspace_root(), exports_dir()


def resolve(raw: str) -> Path:
    """The real path of `raw` (relative to the workspace), if local tools may use it."""
    text = raw.strip()
    if not text:
        raise ToolFailure("路径是空的：请给出工作区内的文件路径。")
    given = Path(os.path.expanduser(text))
    if ".." in given.parts:
        raise ToolFailure(f"路径 {raw} 含有“..”：请直接写工作区内的路径，不要向上跳出。")
    root = workspace_root()
    lexical = given if given.is_absolute() else root / given
    try:
        real = Path(os.path.realpath(lexical))
    except OSError as exc:  # a link swapped while realpath read it
        raise ToolFailure(
            f"无法解析路径 {raw}：{os_error_cause(exc)}（路径可能正被改动），请重试。"
        ) from None
    check_real_path(real, raw, through_link=inside(Path(os.path.abspath(lexical))))
    return real


def check_real_path(real: Path, raw: str, through_link: bool = False) -> None:
    """Refuses a resolved path outside the roots, in WYCKOFF_HOME's state, or holding keys."""
    root, exports = allowed_roots()
    if not inside(real):
        where = f"是指向工作区外（{real}）的符号链接" if through_link else "在工作区外"
        raise ToolFailure(f"{raw} {where}：本地工具只能访问工作区 {root} 和导出文件夹 {exports}。")
    home = home_dir()
    if real.is_relative_to(home) and not real.is_relative_to(exports):
        raise ToolFailure(
            f"{raw} 是 Wyckoff 自己的状态文件（{home}），本地工具不能访问；导出请写到 {exports}。"
        )
    entry = key_file_entry(real)
    if entry:
        raise ToolFailure(f"{raw} 可能存有密钥或口令（{entry}），本地工具不读写这类文件。")


def inside(path: Path) -> bool:
    """Whether `path` is within the workspace or the exports folder (by path components)."""
    return any(path.is_relative_to(root) for root in allowed_roots())


def check_opened(fd: int, raw: str) -> os.stat_result:
    """The checks only an open file answers: a regular file with one link, still inside
    the roots (a folder swapped for a symlink after `resolve` is caught here)."""
    info = os.fstat(fd)
    for test, what in FILE_KINDS:
        if test(info.st_mode):
            raise ToolFailure(f"{raw} {what}，本地工具只处理普通文件。")
    if info.st_nlink > 1:
        raise ToolFailure(
            f"{raw} 有 {info.st_nlink} 个硬链接，可能与工作区外的文件是同一个文件，已拒绝。"
        )
    check_real_path(Path(os.path.realpath(f"/proc/self/fd/{fd}")), raw)
    return info


def open_parent(path: Path, raw: str) -> tuple[int, str]:
    """A descriptor of `path`'s folder and the file's name. The folder is reached from its
    root one component at a time, creating the missing ones and never following a symlink,
    so a folder swapped for a symlink after `resolve` cannot send the write elsewhere."""
    root = next(root for root in allowed_roots() if path.is_relative_to(root))
    root.mkdir(parents=True, exist_ok=True)  # the exports folder may not exist yet
    *folders, name = path.relative_to(root).parts
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folders:
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, dir_fd=fd)
            try:
                inner = os.open(folder, DIRECTORY_NO_LINKS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise ToolFailure(
                        f"无法写入 {raw}：其中的 {folder} 不是文件夹（或是符号链接）。"
                    ) from None
                raise
            os.close(fd)
            fd = inner
        check_real_path(Path(os.path.realpath(f"/proc/self/fd/{fd}")) / name, raw)
    except BaseException:
        os.close(fd)
        raise
    return fd, name


def display(path: Path) -> str:
    """A path as the user reads it: relative to the workspace when inside it."""
    root = workspace_root()
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
