"""`wyckoff data sync` ends with a Chinese sentence, not the result's keys."""

from __future__ import annotations

from wyckoff.cli.commands.market import sync_sentence


def test_the_sync_result_is_said_in_chinese_not_as_key_value_pairs():
    """Found by hand: on demo it printed `同步完成：source=demo，note=演示数据……`."""
    demo = sync_sentence({"source": "demo", "note": "演示数据是本地合成的，不需要同步。"})
    assert demo == "数据源 demo：演示数据是本地合成的，不需要同步。"
    assert sync_sentence({"source": "baostock", "rows": 12345}) == (
        "同步完成（baostock）：写入 12,345 条日线。"
    )
    assert sync_sentence({"source": "tushare", "dates": 3, "rows": 15000}) == (
        "同步完成（tushare）：3 个交易日，写入 15,000 条日线。"
    )
    for said in (demo, sync_sentence({"source": "tushare", "dates": 3, "rows": 1})):
        assert "=" not in said and "note" not in said and "rows" not in said
