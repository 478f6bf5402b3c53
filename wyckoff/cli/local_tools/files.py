"""read_file and write_file: text files in the workspace, read in pages, written atomically.

Reading needs no approval (contents reach the model as untrusted data); writing does, and
the approval shows the path and a diff (for a new file: its size and first lines).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from wyckoff.cli.local_tools.pdf_text import pdf_text
from wyckoff.cli.local_tools.workspace import check_opened, display, open_parent, resolve
from wyckoff.cli.tools import MAX_RESULT_CHARS, ToolContext, ToolFailure, ToolSpec
from wyckoff.errors import describe_os_error

MAX_READ_BYTES = 20 * 1024 * 1024
MAX_WRITE_BYTES = 5 * 1024 * 1024
DEFAULT_LINES = 200
# A page fits in one tool result (as JSON) without being spilled to disk.
PAGE_CHARS = MAX_RESULT_CHARS - 1_000
SNIFF_BYTES = 8192
PREVIEW_LINES = 12
DIFF_LINES = 80
NEW_FILE_MODE = 0o644  # the user's file, not Wyckoff's private state (which is 0600)
# Magic numbers of binary files a user is likely to point at, so the refusal names them.
PDF_SIGNATURE = b"%PDF"
BINARY_SIGNATURES = (
    (PDF_SIGNATURE, "PDF 文档"),
    (b"\x89PNG", "PNG 图片"),
    (b"\xff\xd8\xff", "JPEG 图片"),
    (b"GIF8", "GIF 图片"),
    (b"PK\x03\x04", "ZIP 压缩包（也可能是 xlsx/docx）"),
    (b"\x1f\x8b", "gzip 压缩文件"),
    (b"\x7fELF", "可执行程序（ELF）"),
    (b"SQLite format 3\x00", "SQLite 数据库"),
    (b"PAR1", "Parquet 数据文件"),
    (b"\xd0\xcf\x11\xe0", "旧版 Office 文档（xls/doc）"),
)
TEXT_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


class ReadFileParams(BaseModel):
    path: str = Field(description="工作区内的文件路径（相对工作区，或工作区内的绝对路径）")
    offset: int = Field(default=1, ge=1, description="从第几行开始读（从 1 开始）")
    limit: int = Field(default=DEFAULT_LINES, ge=1, le=2000, description="最多读多少行")
    column: int = Field(
        default=1,
        ge=1,
        description="从 offset 那一行的第几个字符读起（续读超长行时用 next_column）",
    )


class WriteFileParams(BaseModel):
    path: str = Field(description="工作区内的文件路径；导出也可写到 WYCKOFF_HOME/exports")
    content: str = Field(description="要写入的完整文本")
    mode: Literal["create", "overwrite", "append"] = Field(
        default="create", description="create 新建（已存在则失败）| overwrite 覆盖 | append 追加"
    )


def decode_text(data: bytes, name: str) -> tuple[str, str]:
    """The text and its encoding: UTF-8 (or a BOM's), else GB18030 (a superset of GBK);
    binary files are refused with their type."""
    for bom, encoding in TEXT_BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), encoding
    for signature, kind in BINARY_SIGNATURES:
        if data.startswith(signature):
            raise ToolFailure(f"{name} 是{kind}，不是文本文件，read_file 只读文本。")
    if b"\x00" in data[:SNIFF_BYTES]:
        raise ToolFailure(f"{name} 是二进制文件（含 NUL 字节），不是文本文件，read_file 只读文本。")
    for encoding in ("utf-8", "gb18030"):
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    raise ToolFailure(f"{name} 既不是 UTF-8 也不是 GBK/GB18030 编码的文本，无法读取。")


def file_text(data: bytes, name: str) -> tuple[str, str]:
    """The text of a file as read_file and web_fetch return it: a PDF's text layer, or text."""
    if data.startswith(PDF_SIGNATURE):
        return pdf_text(data, name), "pdf"
    return decode_text(data, name)


def read_bytes(path: Path, raw: str, limit: int = MAX_READ_BYTES) -> bytes:
    """A regular file's bytes, opened without following a last-moment symlink and without
    blocking (a FIFO swapped in is refused, not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ToolFailure(f"{raw} 不存在。") from None
    except OSError as exc:
        raise ToolFailure(describe_os_error(exc, "打开", raw)) from None
    with os.fdopen(fd, "rb") as handle:
        size = check_opened(fd, raw).st_size
        if size > limit:
            raise ToolFailure(
                f"{raw} 有 {human_size(size)}，超过 read_file 的上限 {human_size(limit)}；"
                "可用 exec_command 的 head、sed -n 或 grep 取出需要的部分。"
            )
        return handle.read(limit + 1)[:limit]


@dataclass
class Page:
    """One page of a file: whole lines, or a piece of one line longer than a page."""

    text: str
    last_line: int  # 1-based; the line the page ends in (start - 1 when empty)
    next_column: int | None  # where the cut line goes on, when the page ends inside it


def escaped_size(text: str) -> int:
    """The length of `text` as escaped in the JSON result."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def page_of(lines: list[str], offset: int, column: int, limit: int) -> Page:
    """Up to `limit` lines from line `offset` (its character `column` on), no more than
    PAGE_CHARS in all: a line longer than that is cut, and the page says where it goes on."""
    pieces, chars = [], 0
    for number, line in enumerate(lines[offset - 1 : offset - 1 + limit], offset):
        piece = line[column - 1 :] if number == offset else line
        size = escaped_size(piece)
        if chars + size <= PAGE_CHARS:
            pieces.append(piece)
            chars += size
            continue
        if pieces:
            return Page("".join(pieces), number - 1, None)
        cut = PAGE_CHARS
        while cut > 1 and (size := escaped_size(piece[:cut])) > PAGE_CHARS:
            cut = cut * PAGE_CHARS // size
        start = column if number == offset else 1
        return Page(piece[:cut], number, start + cut)
    return Page("".join(pieces), offset - 1 + len(pieces), None)


def read_file(params: ReadFileParams, context: ToolContext) -> dict[str, Any]:
    path = resolve(params.path)
    text, encoding = file_text(read_bytes(path, params.path), params.path)
    lines = text.splitlines(keepends=True)
    page = page_of(lines, params.offset, params.column, params.limit)
    result: dict[str, Any] = {
        "path": display(path),
        "encoding": encoding,
        "lines": f"{params.offset}-{page.last_line}" if page.text else "无",
        "total_lines": len(lines),
        "text": page.text,
    }
    if page.next_column:
        line = lines[page.last_line - 1]
        result["long_line"] = (
            f"第 {page.last_line} 行很长（{len(line):,} 个字符），本页只到它的第 "
            f"{page.next_column - 1:,} 个字符；用 offset={page.last_line}、"
            f"column={page.next_column} 接着读。"
        )
        result["next_offset"], result["next_column"] = page.last_line, page.next_column
    elif page.last_line < len(lines):
        result["next_offset"] = page.last_line + 1
    return result


def write_file(params: WriteFileParams, context: ToolContext) -> dict[str, Any]:
    path, old, encoding = _write_target(params)
    new = (old or "") + params.content if params.mode == "append" else params.content
    data = new.encode(encoding)
    if len(data) > MAX_WRITE_BYTES:
        raise ToolFailure(
            f"写入后 {display(path)} 将有 {human_size(len(data))}，超过 write_file 的上限 "
            f"{human_size(MAX_WRITE_BYTES)}。"
        )
    _replace_atomically(path, data, params.path)
    return {
        "path": display(path),
        "mode": params.mode,
        "bytes": len(data),
        "lines": len(new.splitlines()),
        "encoding": encoding,
        "created": old is None,
    }


def _write_target(params: WriteFileParams) -> tuple[Path, str | None, str]:
    """Where to write, the current text (None for a new file) and the encoding to keep."""
    path = resolve(params.path)
    if not os.path.lexists(path):
        return path, None, "utf-8"
    if params.mode == "create":
        raise ToolFailure(
            f"{params.path} 已存在：要替换请用 mode=overwrite，要在末尾添加请用 mode=append。"
        )
    old, encoding = decode_text(read_bytes(path, params.path, MAX_WRITE_BYTES), params.path)
    return path, old, "utf-8" if encoding == "utf-8-sig" and params.mode != "append" else encoding


def _replace_atomically(path: Path, data: bytes, raw: str) -> None:
    """Write a temporary file in `path`'s folder, then rename it over: never half a file.
    Everything happens through the folder's descriptor (see `open_parent`)."""
    try:
        folder, name = open_parent(path, raw)
    except OSError as exc:
        raise ToolFailure(describe_os_error(exc, "写入", raw)) from None
    temp = f".{name}.{secrets.token_hex(4)}.tmp"
    try:
        mode = _current_mode(folder, name, raw)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(temp, flags, 0o600, dir_fd=folder), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=folder)
        raise
    finally:
        os.close(folder)


def _current_mode(folder: int, name: str, raw: str) -> int:
    """The permissions to keep: the existing file's, or a new file's."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return NEW_FILE_MODE
    if not stat.S_ISREG(info.st_mode):
        raise ToolFailure(f"{raw} 不是普通文件（可能刚被换成了符号链接），没有写入。")
    return info.st_mode & 0o777


def describe_write(params: WriteFileParams, context: ToolContext) -> str:
    """The write as the approval dialog shows it: the path, then a diff or the first lines."""
    try:
        path, old, encoding = _write_target(params)
    except ToolFailure as exc:
        return f"写入文件 {params.path}（不会执行：{exc.message}）"
    size = human_size(len(params.content.encode(encoding)))
    if old is None:
        head = shown_lines(params.content)[:PREVIEW_LINES]
        more = "\n  ……" if len(shown_lines(params.content)) > PREVIEW_LINES else ""
        body = "\n".join(f"  {line}" for line in head)
        return f"新建文件 {display(path)}（{size}），前 {len(head)} 行：\n{body}{more}"
    if params.mode == "append":
        added = "\n".join(f"+ {line}" for line in shown_lines(params.content)[:DIFF_LINES])
        return f"在 {display(path)} 末尾追加 {size}：\n{added}"
    diff = list(
        difflib.unified_diff(
            shown_lines(old), shown_lines(params.content), "原文件", "新内容", lineterm="", n=2
        )
    )
    shown = "\n".join(diff[:DIFF_LINES]) or "（内容没有变化）"
    more = f"\n……（差异共 {len(diff)} 行）" if len(diff) > DIFF_LINES else ""
    return f"覆盖文件 {display(path)}（新内容 {size}），差异：\n{shown}{more}"


def shown_lines(text: str) -> list[str]:
    """Lines as an approval shows them: split at line feeds only, so a U+2028 or a form feed
    stays inside its line, where the approval text shows its code."""
    if not text:
        return []
    return [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def summarize_read(data: dict[str, Any]) -> str:
    return f"读取 {data['path']} 第 {data['lines']} 行（共 {data['total_lines']} 行，{data['encoding']}）"


def summarize_write(data: dict[str, Any]) -> str:
    verb = {"create": "新建", "overwrite": "覆盖", "append": "追加"}[data["mode"]]
    return f"{verb}写入 {data['path']} {human_size(data['bytes'])}"


READ_FILE = ToolSpec(
    name="read_file",
    description=(
        "读取工作区内的文本文件（UTF-8 或 GBK/GB18030）或 PDF 的文字，按行分页"
        "（每页约 7,000 字符以内，超长的行会被切开）：结果里有 next_offset（和 next_column）时"
        "用它们继续读。其他二进制文件（图片、Excel 等）会被拒绝。"
    ),
    params=ReadFileParams,
    func=read_file,
    title="读取文件",
    summarize=summarize_read,
    concurrency_safe=True,
    timeout_s=30,
    reads_private=True,
)

WRITE_FILE = ToolSpec(
    name="write_file",
    description=(
        "把文本写入工作区内的文件（或 WYCKOFF_HOME/exports），需要用户批准；"
        "mode=create 新建、overwrite 覆盖、append 追加。写入是原子的。"
    ),
    params=WriteFileParams,
    func=write_file,
    title="写入文件",
    summarize=summarize_write,
    requires_approval=True,
    timeout_s=30,
    describe=describe_write,
)
