"""The terrain's config: a grid of tiles, rows of rising difficulty, columns of terrain types.

Every field is an ``env.terrain.*`` Hydra override (``env.terrain.num_rows=5``,
``env.terrain.types.stairs_up.params.step_height_range=[0.05,0.15]``, ``~env.terrain.types.boxes``); a type is a
tile height function (``robolab.terrains.tiles``, or ``module:function`` of a user's own) with its parameters and
its share of the columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TerrainTypeCfg:
    """One terrain type: its tile function and parameters, its share of the columns, and its geometry."""

    func: Any = "flat"
    """A function of ``robolab.terrains.tiles`` by name, or ``module:function``."""
    proportion: float = 1.0
    """Share of the grid's columns (normalised over the types)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of ``func``; a ``(low, high)`` range spans the rows' difficulties."""
    geometry: str = "heightfield"
    """How the physics holds the tiles: ``heightfield`` (MuJoCo's triangles between the samples: a change of height
    is a ramp one sample wide) or ``boxes`` (a box geom per flat patch of the tile: vertical risers, for stepped
    tiles such as stairs; ``robolab.terrains.boxes``)."""


def rough_terrain_types() -> dict[str, TerrainTypeCfg]:
    """The field's standard mix (Isaac Lab's and legged_gym's rough terrain), named by what a robot that walks out
    of a tile's centre meets: stairs and slopes up and down, random rough ground, boxes, and some flat. The pyramids'
    platform and flat border are listed so that a Hydra override can change them without ``+``. The stairs are
    boxes: on the height field a 0.15 m riser is a 56-degree ramp across one 0.1 m sample, where a foot slips."""
    slope = {"slope_deg_range": (0.0, 25.0), "platform_width": 2.0, "border_width": 0.25}
    stairs = {"step_height_range": (0.05, 0.20), "step_width": 0.3, "platform_width": 3.0, "border_width": 1.0}
    return {
        "flat": TerrainTypeCfg(func="flat", proportion=0.1),
        "random_rough": TerrainTypeCfg(func="random_rough", proportion=0.15, params={"amplitude_range": (0.02, 0.10)}),
        "slope_up": TerrainTypeCfg(func="pyramid_slope", proportion=0.125, params={**slope, "inverted": True}),
        "slope_down": TerrainTypeCfg(func="pyramid_slope", proportion=0.125, params=dict(slope)),
        "stairs_up": TerrainTypeCfg(
            func="pyramid_stairs", proportion=0.2, params={**stairs, "inverted": True}, geometry="boxes"
        ),
        "stairs_down": TerrainTypeCfg(func="pyramid_stairs", proportion=0.15, params=dict(stairs), geometry="boxes"),
        "boxes": TerrainTypeCfg(func="discrete_obstacles", proportion=0.15, params={"height_range": (0.05, 0.20)}),
    }


@dataclass
class TerrainCfg:
    """A generated height-field terrain (``robolab.terrains.generator``); the same seed gives the same terrain."""

    tile_size: tuple[float, float] = (8.0, 8.0)
    """Metres along x (rows) and y (columns)."""
    num_rows: int = 10
    """Difficulty levels, from 0 (easiest) along +x."""
    num_cols: int = 20
    """Tiles per level; the types share them by ``proportion``."""
    horizontal_scale: float = 0.1
    """Metres between two height samples (a stair's riser spans one). Isaac Lab's and legged_gym's 0.1: on a finer
    field MuJoCo Warp's height-field contacts diverge more often (docs/terrain.md, measured)."""
    border_width: float = 3.0
    """Flat ground around the grid (m)."""
    seed: int = 0
    """The terrain's own seed (every rank of a run builds the same terrain, whatever its env seed)."""
    max_init_level: int = 5
    """New envs start on a random level in [0, min(max_init_level, num_rows - 1)]; the curriculum moves them."""
    types: dict[str, TerrainTypeCfg] = field(default_factory=rough_terrain_types)
    """Terrain types by name, each a tile function, its parameters and its share of the columns."""
