"""Expected failures: each carries one clear Chinese sentence and the exit code the CLI uses;
`describe_os_error` says in Chinese why a file could not be read or written."""

from __future__ import annotations

import errno


class WyckoffError(Exception):
    """A failure the user can act on. `str(err)` is what they see; never a traceback."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(WyckoffError):
    """The configuration file or a command's arguments are wrong (exit code 2)."""

    exit_code = 2


class InvalidField(ConfigError):
    """A value given for a config field is wrong: the CLI names the option it came from."""

    def __init__(self, message: str, field: str, problem: str) -> None:
        super().__init__(message)
        self.field = field
        self.problem = problem


class UsageError(WyckoffError):
    """A command was called with arguments that cannot work (exit code 2)."""

    exit_code = 2


class NothingToDo(WyckoffError):
    """There was nothing to act on (no stock to check): not a failure. Its own exit code, so
    a scheduled run records the step as done with this sentence instead of as failed."""

    exit_code = 4  # 3 is `ask` stopping at its round limit


OS_ERROR_CAUSES = {
    errno.ENOENT: "文件或文件夹不存在",
    errno.EACCES: "没有权限",
    errno.EPERM: "没有权限",
    errno.ENOSPC: "磁盘已满",
    errno.EDQUOT: "磁盘配额已用完",
    errno.EROFS: "所在的磁盘是只读的",
    errno.EISDIR: "这是一个文件夹，不是文件",
    errno.ENOTDIR: "路径中有一项不是文件夹",
    errno.EEXIST: "已有同名的文件或文件夹",
    errno.EADDRINUSE: "端口已被占用",
}


def os_error_cause(exc: OSError) -> str:
    """Why the system refused, in Chinese; a cause not mapped keeps the system's own words
    in brackets so nothing is lost."""
    return OS_ERROR_CAUSES.get(exc.errno or 0) or f"系统拒绝了这次操作（{exc.strerror or exc}）"


def describe_os_error(exc: OSError, action: str = "访问", path: object = None) -> str:
    """One sentence: what could not be done to which path, and why: `无法写入 X：磁盘已满。`"""
    where = path if path is not None else exc.filename
    return f"无法{action}{f' {where}' if where else ''}：{os_error_cause(exc)}。"
