"""Installation script for robolab; metadata and dependencies come from extension.toml."""

import os
import sys

from setuptools import find_packages, setup

ROOT = os.path.dirname(os.path.abspath(__file__))
if sys.version_info >= (3, 11):
    import tomllib

    with open(os.path.join(ROOT, "extension.toml"), "rb") as f:
        EXTENSION = tomllib.load(f)
else:  # Python 3.10 (Isaac Lab 2.x environments ship the `toml` package)
    import toml

    EXTENSION = toml.load(os.path.join(ROOT, "extension.toml"))

# robolab-<name> runs robolab.cli.<module>:main, as scripts/<file>.py does.
CONSOLE_SCRIPTS = {
    "train": "train",
    "play": "play",
    "sim2sim": "sim2sim",
    "benchmark": "benchmark",
    "time-to-walk": "time_to_walk",
    "terrain": "terrain",
    "motion": "motion",
    "plot-curve": "plot",
    "isaac-asset-root": "isaac_asset_root",
    "warmup": "warmup",
}

setup(
    name="robolab",
    version=EXTENSION["package"]["version"],
    description=EXTENSION["package"]["description"],
    keywords=EXTENSION["package"]["keywords"],
    license="BSD-3-Clause",
    license_files=["LICENSE"],
    python_requires=">=3.10",
    # The Hydra config tree lives at the top level (config/) and ships inside the package as robolab.hydra_configs,
    # so a wheel or a non-editable install finds it through importlib.resources.
    package_dir={"": "source", "robolab.hydra_configs": "config"},
    packages=[*find_packages(where="source"), "robolab.hydra_configs"],
    package_data={"robolab": ["amp/data/*.npz"], "robolab.hydra_configs": ["*.yaml", "*/*.yaml", "*/*/*.yaml"]},
    install_requires=EXTENSION["python"]["requires"],
    extras_require=EXTENSION["python"]["extras"],
    entry_points={
        # The same commands as scripts/*.py (which Isaac Lab users keep), on the PATH of the environment.
        "console_scripts": [f"robolab-{name} = robolab.cli.{module}:main" for name, module in CONSOLE_SCRIPTS.items()],
        # Isaac Lab's CLI (`isaaclab train`, `isaaclab list_envs`) imports the task modules of this group.
        "isaaclab.tasks": ["robolab = robolab.tasks.isaaclab"],
    },
    zip_safe=False,
)
