"""Stands in for wandb in the test suite's processes (``../neptune/__init__.py`` says why)."""

raise ModuleNotFoundError("wandb is hidden from this test process (tests/helpers/without_loggers)", name="wandb")
