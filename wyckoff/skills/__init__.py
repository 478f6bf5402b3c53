"""Built-in skills (markdown), installed as package data."""
