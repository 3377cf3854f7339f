"""Stands in for neptune in the test suite's processes, which then run as on a machine without it.

The test extra installs neptune and wandb for the tests of their loggers, and rsl_rl imports both whenever they are
installed (``rsl_rl.utils`` imports every log writer): 1.4 s for neptune and 0.7 s for wandb in every process the
suite starts (hundreds). ``tests/conftest.py:clean_env`` puts this folder first on ``PYTHONPATH``;
``clean_env(**WITH_LOGGERS)`` gives a test the real ones.
"""

raise ModuleNotFoundError("neptune is hidden from this test process (tests/helpers/without_loggers)", name="neptune")
