"""What every source shares: its error, the progress callback, and the isolated child
process the libraries without timeouts (baostock, akshare) run in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wyckoff.errors import WyckoffError


class SourceError(WyckoffError):
    """A data source failed; the message says what to do."""


Progress = Callable[[str, str, float | None], None]


def run_isolated(target: Callable[..., Any], args: tuple, timeout_s: float) -> Any:
    """Run `target(*args)` in a child process with stdout captured and a hard timeout."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        pending = pool.apply_async(_quiet_call, (target, args))
        try:
            return pending.get(timeout=timeout_s)
        except multiprocessing.TimeoutError:
            pool.terminate()
            raise SourceError(
                f"数据源在 {timeout_s:g} 秒内没有响应，已中止。请检查网络后重试。"
            ) from None
        except Exception as exc:  # the library's own failure, raised in the child
            raise SourceError(
                f"数据源出错：{exc}。请检查网络后重试 `wyckoff data sync`，已保存的数据不受影响。"
            ) from None


def _quiet_call(target: Callable[..., Any], args: tuple) -> Any:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return target(*args)
