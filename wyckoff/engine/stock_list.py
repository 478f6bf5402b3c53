"""A panel's stock list (name, industry, board, is_st, market_cap, list_date, and whatever else
the source gives), one row per panel column.

Importing pandas costs a warm `wyckoff analyze` more than its whole diagnosis, so the list a
panel cache reads stays plain columns; the pandas frame is built only for the callers that
ask for one. Once built (or when the panel was made from a frame), the frame is the list:
a change made to it is what every reader sees.
"""

from __future__ import annotations

import math
from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


class StockList:
    def __init__(self, codes: list[str], columns: dict[str, list], dtypes: dict[str, str]) -> None:
        self.codes = codes
        self.columns = columns  # column name -> one value per code
        self.dtypes = dtypes  # column name -> pandas dtype, for the frame
        self._frame: pd.DataFrame | None = None

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> StockList:
        stocks = cls(list(frame.index), {}, {})
        stocks._frame = frame
        return stocks

    def frame(self) -> pd.DataFrame:
        """The list as a pandas frame indexed by code (built on first use)."""
        if self._frame is None:
            import pandas as pd

            frame = pd.DataFrame(self.columns, index=pd.Index(self.codes, name="code"))
            self._frame = frame.astype(self.dtypes)
        return self._frame

    def has(self, column: str) -> bool:
        return column in (self.columns if self._frame is None else self._frame.columns)

    def values(self, column: str) -> list[Any]:
        """One value per stock, as plain Python values (NaN or None when unknown)."""
        if self._frame is None:
            return self.columns[column]
        return self._frame[column].tolist()

    def value(self, j: int, column: str) -> Any:
        return self.values(column)[j]

    def texts(self, column: str, missing: str = "") -> list[str]:
        """The column as text, `missing` where it is unknown (like pandas' fillna)."""
        return [missing if _unknown(v) else str(v) for v in self.values(column)]

    def listing_date(self, j: int) -> str | None:
        """Stock j's listing date as YYYY-MM-DD (stored as YYYYMMDD or YYYY-MM-DD), if known."""
        if not self.has("list_date"):
            return None
        digits = "".join(ch for ch in str(self.value(j, "list_date")) if ch.isdigit())
        if len(digits) != 8:
            return None
        try:
            return date(int(digits[:4]), int(digits[4:6]), int(digits[6:])).isoformat()
        except ValueError:  # no such day
            return None

    def name_on(self, j: int, day: str) -> str:
        """Stock j's name on `day` (YYYY-MM-DD) where the store knows its names by date
        (`name_history`), else its name today: a 2015 trade of today's ST美讯 was a trade of
        美讯股份. Before its first known name, the first one."""
        history = self.value(j, "name_history") if self.has("name_history") else None
        if _unknown(history) or not history:
            return str(self.value(j, "name"))
        runs = [(run[:10], run[11:]) for run in str(history).split("|")]
        return next((name for start, name in reversed(runs) if start <= day), runs[0][1])

    def row(self, j: int) -> StockList:
        """A list of stock j alone."""
        if self._frame is not None:
            return StockList.from_frame(self._frame.iloc[j : j + 1])
        columns = {name: values[j : j + 1] for name, values in self.columns.items()}
        return StockList(self.codes[j : j + 1], columns, self.dtypes)


def _unknown(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
