"""Stands in for neptune in the test suite's processes, which then run as on a machine without it.

The test extra installs neptune for the test of the Neptune logger, and rsl_rl imports it whenever it is installed:
1.4 s for every process the suite starts (hundreds). ``tests/conftest.py:clean_env`` puts this folder first on
``PYTHONPATH``; ``clean_env(PYTHONPATH="")`` gives a test the real neptune.
"""

raise ModuleNotFoundError("neptune is hidden from this test process (tests/helpers/without_neptune)", name="neptune")
