"""unit tests (shared fixtures and helpers live in tests/)."""
