"""A file the system will not read or write is one Chinese sentence naming the path and why,
never the system's English alone, and never a traceback."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from tests.conftest import cli

ENGLISH_WORDS = ("No such", "Permission", "No space", "Read-only", "Is a directory", "Not a")


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        (errno.ENOENT, "文件或文件夹不存在"),
        (errno.EACCES, "没有权限"),
        (errno.ENOSPC, "磁盘已满"),
        (errno.EROFS, "所在的磁盘是只读的"),
        (errno.EISDIR, "这是一个文件夹，不是文件"),
        (errno.ENOTDIR, "路径中有一项不是文件夹"),
    ],
)
def test_each_common_cause_is_said_in_chinese_with_the_path(code, cause):
    from wyckoff.errors import describe_os_error

    error = OSError(code, os.strerror(code), "/data/报告.md")
    assert describe_os_error(error, "写入") == f"无法写入 /data/报告.md：{cause}。"


def test_a_rarer_cause_keeps_the_systems_words_in_brackets():
    from wyckoff.errors import describe_os_error

    error = OSError(errno.EFBIG, os.strerror(errno.EFBIG), "/data/big.csv")
    assert describe_os_error(error, "写入") == (
        f"无法写入 /data/big.csv：系统拒绝了这次操作（{os.strerror(errno.EFBIG)}）。"
    )


def test_an_import_through_a_file_says_the_path_is_not_a_folder(home, tmp_path):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x")
    result = cli("portfolio", "import", str(blocker / "positions.csv"))
    assert result.returncode == 2
    assert (
        result.stderr
        == f"错误：无法读取文件 {blocker / 'positions.csv'}：路径中有一项不是文件夹。\n"
    )


def test_a_home_under_a_file_says_why_it_cannot_be_used(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = cli("portfolio", "list", env={"WYCKOFF_HOME": str(blocker / "home")})
    assert result.returncode == 2
    assert "（路径中有一项不是文件夹）" in result.stderr
    assert not any(word in result.stderr for word in ENGLISH_WORDS)


def test_a_brief_that_cannot_be_saved_is_one_sentence_not_a_traceback(demo_home):
    (demo_home / "briefs").write_text("not a folder")  # where the briefs are saved
    result = cli("brief")
    assert result.returncode == 1
    assert result.stderr.endswith(
        f"错误：无法访问 {demo_home / 'briefs'}：已有同名的文件或文件夹。\n"
    )
    assert "Traceback" not in result.stderr and (demo_home / "briefs").read_text() == "not a folder"


def test_brief_out_never_replaces_a_pipe_or_device(demo_home, tmp_path):
    pipe = tmp_path / "pipe"  # as /dev/null would be: written to, it was replaced by a file
    os.mkfifo(pipe)
    result = cli("brief", "--out", str(pipe))
    assert result.returncode == 2 and "不是普通文件" in result.stderr
    assert stat.S_ISFIFO(pipe.stat().st_mode)
