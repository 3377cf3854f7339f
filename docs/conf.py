"""Sphinx configuration of robolab's documentation site: `sphinx-build -W -b html docs docs/_build/html`.

The pages are MyST Markdown; the API reference is generated from the package's docstrings (autodoc), so a public
function or config field is documented where it is declared. `-W` makes every warning an error: a broken
cross-reference, a missing page or a docstring that does not parse fails the build (and `.ci/run`).
"""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "source"))

import robolab  # noqa: E402  (after the path above)

project = "robolab"
copyright = "2026, the robolab developers"
release = robolab.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "benchmarks/**", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
# Optional heavy imports (Isaac Lab, warp, JAX) are mocked, so the reference builds on any machine.
autodoc_mock_imports = ["isaaclab", "isaaclab_tasks", "isaaclab_rl", "isaacsim", "omni", "pxr", "jax", "viser"]

html_theme = "furo"
html_title = f"robolab {release}"
