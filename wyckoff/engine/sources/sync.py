"""`wyckoff data sync`: fill the market store of the chosen source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wyckoff.engine.market_store import MarketStore
from wyckoff.engine.sources.akshare import AKSHARE
from wyckoff.engine.sources.baostock import BAOSTOCK
from wyckoff.engine.sources.base import Progress, SourceError
from wyckoff.engine.sources.choice import resolve_source, tushare_token
from wyckoff.engine.sources.demo import ensure_demo
from wyckoff.engine.sources.per_code import sync_per_code
from wyckoff.engine.sources.tushare import TushareClient, sync_tushare


def sync(
    home: Path, config, days: int, codes: list[str] | None, progress: Progress
) -> dict[str, Any]:
    """Fill the store of the chosen source."""
    source = resolve_source(config)
    store = MarketStore.for_source(home, source)
    if source == "demo":
        ensure_demo(home, progress)
        return {"source": "demo", "note": "演示数据是本地合成的，不需要同步。"}
    if source == "import":
        raise SourceError(
            "数据源 import 的行情来自你导入的文件，不能同步：用 `wyckoff data import FILE` 追加新数据，"
            "或用 `wyckoff data use baostock`（或 tushare、akshare）改用可同步的数据源。"
        )
    if source == "tushare":
        token = tushare_token(config)
        if not token:
            raise SourceError(
                "tushare 需要 token：设置环境变量 TUSHARE_TOKEN，或运行 `wyckoff data use tushare --token TOKEN`。"
            )
        client = TushareClient(token, config.data.tushare_url)
        try:
            return {"source": source, **sync_tushare(store, client, days, codes, progress)}
        finally:
            client.close()
    per_code = BAOSTOCK if source == "baostock" else AKSHARE
    return {"source": source, **sync_per_code(store, per_code, days, codes, progress)}
