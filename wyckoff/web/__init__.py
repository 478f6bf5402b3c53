"""`wyckoff web`: the reading room in a browser, over the same Agent door as the TUI."""
