"""One OpenBLAS thread for a Wyckoff command. numpy's OpenBLAS starts a thread per core
when numpy is loaded, and they spin waiting for work: ~45 ms of CPU on a 2-core machine,
more than a warm `analyze` computes, and Wyckoff makes no BLAS calls (matrix products,
linear algebra). A value the user set wins, and commands Wyckoff runs for the user do not
inherit ours (cli/local_tools/shell.py)."""

from __future__ import annotations

import os

VARIABLE = "OPENBLAS_NUM_THREADS"  # read once, when numpy loads the library
_set_here: set[str] = set()


def use_one_thread() -> None:
    """Before numpy is imported: one BLAS thread, unless the user chose a number."""
    if VARIABLE not in os.environ:
        os.environ[VARIABLE] = "1"
        _set_here.add(VARIABLE)


def environment_to_pass_on(env: dict[str, str]) -> dict[str, str]:
    """`env` without the variables this process set only for itself."""
    return {name: value for name, value in env.items() if name not in _set_here}
