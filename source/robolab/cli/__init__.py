"""Command-line programs behind ``scripts/`` (kept in the package so tests can reach them)."""
