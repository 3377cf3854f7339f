"""``scripts/terrain.py``: draw the terrain a task generates (top view PNG, levels and types labelled).

    python scripts/terrain.py --task RoboLab-Velocity-Rough-Go2-v0 --output terrain.png env.terrain.num_rows=5

``env.terrain.*`` overrides are the training command's, so what is drawn is what a run with them stands on.
"""

from __future__ import annotations

import argparse
import sys

from robolab.cli import one_line_errors

MAX_PIXELS = 1600
"""Longest side of the drawn height map (sampled down to it: the default 0.1 m map of a 80 x 160 m grid has 1661)."""


def load_terrain_cfg(task_id: str, overrides: list[str]):
    """The task's ``TerrainCfg`` with the command line's ``env.*`` overrides (Hydra's spelling, ``~`` included)."""
    from omegaconf import OmegaConf

    from robolab import tasks
    from robolab.config import ConfigError, build_env_cfg, hydra_overrides

    bad = [o for o in overrides if not o.lstrip("~+").startswith("env.")]
    if bad:
        raise ConfigError(f"{bad[0]}: only env.* overrides shape the terrain")
    tasks.load_task_packages()
    dotlist = [o.removeprefix("++env.") for o in hydra_overrides(overrides)]
    env_cfg = build_env_cfg(task_id, OmegaConf.from_dotlist(dotlist))
    if env_cfg.terrain is None:
        raise ConfigError(f"{task_id} has no generated terrain (env.terrain is null): it stands on a flat floor")
    return env_cfg.terrain


def draw(terrain, output, title: str) -> None:
    """The height map from above, tiles outlined, rows and columns labelled; ``output``: a path or binary file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heights = terrain.heights
    stride = max(1, -(-max(heights.shape) // MAX_PIXELS))
    shown = heights[::stride, ::stride]
    x0, y0 = terrain.origin
    ex, ey = terrain.extent
    rows, cols = terrain.tile_origins.shape[:2]
    fig, ax = plt.subplots(figsize=(0.4 * cols + 4.5, 0.4 * rows + 2.5))
    image = ax.imshow(shown.T, origin="lower", extent=(y0, y0 + ey, x0, x0 + ex), cmap="terrain", aspect="equal")
    fig.colorbar(image, ax=ax, label="height (m)", shrink=0.8)
    x_min, _, y_min, _ = terrain.grid_bounds
    for r in range(rows + 1):
        ax.axhline(x_min + r * terrain.tile_size[0], color="k", lw=0.4)
    for c in range(cols + 1):
        ax.axvline(y_min + c * terrain.tile_size[1], color="k", lw=0.4)
    ax.set_yticks(terrain.tile_origins[:, 0, 0])
    ax.set_yticklabels([f"level {r} ({d:.2f})" for r, d in enumerate(terrain.difficulty)], fontsize=7)
    ax.set_xticks(terrain.tile_origins[0, :, 1])
    ax.set_xticklabels(terrain.type_names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("x (m): rows of rising difficulty")
    ax.set_xlabel("y (m): columns of terrain types")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(output, dpi=130, format="png")
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """``robolab-terrain``: draw a task's generated terrain (top view, levels and types labelled) into a PNG."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="RoboLab-Velocity-Rough-Go2-v0")
    p.add_argument("--output", default="terrain.png", help="PNG path")
    args, overrides = p.parse_known_args(argv)

    def program() -> None:
        from robolab.files import atomic_write
        from robolab.terrains import generate

        cfg = load_terrain_cfg(args.task, overrides)
        terrain = generate(cfg)
        title = (
            f"{args.task}: {len(terrain.difficulty)} levels x {len(terrain.type_names)} tiles of "
            f"{cfg.tile_size[0]:g} x {cfg.tile_size[1]:g} m, seed {cfg.seed}"
        )
        atomic_write(args.output, lambda f: draw(terrain, f, title))
        print(f"[robolab] wrote {args.output} ({terrain.heights.shape[1]} x {terrain.heights.shape[0]} samples)")

    return one_line_errors(program)


if __name__ == "__main__":
    sys.exit(main())
