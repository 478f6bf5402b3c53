"""Every parameter a sweep may vary declares its range beside its definition, and its own
default lies inside it (a range that refused the default would refuse the plain backtest)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from wyckoff.engine.sweep_grid import EXIT_DEFAULTS, RANGES, parse_grid
from wyckoff.engine.thresholds import DEFAULT_CONFIG, EngineConfig

DEFAULTS = {
    **EXIT_DEFAULTS,
    **{f.name: getattr(DEFAULT_CONFIG, f.name) for f in fields(EngineConfig)},
}


def test_every_parameter_has_a_range():
    assert set(RANGES) == set(DEFAULTS)


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_a_sweep_of_the_default_alone_is_accepted(name):
    default = DEFAULTS[name]
    value = list(default) if isinstance(default, tuple) else default
    assert parse_grid({name: [value]}).describe()[name] == [default]
