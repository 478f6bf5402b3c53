"""Wyckoff: a terminal-first Wyckoff research agent for China A-share investors."""

__version__ = "0.1.0"
