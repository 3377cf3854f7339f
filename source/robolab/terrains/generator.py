"""Generate a terrain from its config: one height map (numpy) with the tiles' centres, types and difficulties.

The map is the ground of a MuJoCo height field (``robolab.terrains.heightfield``), with box geoms on the tiles of a
``geometry: boxes`` type (``robolab.terrains.boxes``), and the exact source of the height scan, so what the robot
stands on and what it senses come from the same arrays. Rows of tiles run along +x with
rising difficulty, columns along +y hold the types; the map is centred on the world origin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robolab.envs.terms import TermError, bind, guarded, resolve_func
from robolab.terrains import boxes as box_tiles
from robolab.terrains.config import TerrainCfg

GEOMETRIES = ("heightfield", "boxes")

TILES_MODULE = "robolab.terrains.tiles"


@dataclass
class TerrainMap:
    """A generated terrain: heights at every vertex of a regular grid, and where each tile is."""

    heights: np.ndarray
    """(ny, nx) float32 metres; ``heights[r, c]`` is the ground at (x0 + c * spacing, y0 + r * spacing)."""
    field_heights: np.ndarray
    """(ny, nx) float32: the MuJoCo height field's samples; ``heights`` except under box tiles, where it is sunk."""
    boxes: np.ndarray
    """(n, 6) float32 box geoms ``(x, y, z, half_x, half_y, half_z)``, world frame: the box tiles' ground."""
    stepped: np.ndarray
    """(ny, nx) bool: the samples whose square of ground (one spacing wide, centred on them) is a box top."""
    spacing: float
    origin: tuple[float, float]
    """World (x0, y0) of ``heights[0, 0]``."""
    tile_origins: np.ndarray
    """(num_rows, num_cols, 3) float32: the centre of each tile on its ground (where a robot starts)."""
    type_names: list[str]
    """The type of each column."""
    difficulty: np.ndarray
    """(num_rows,) difficulty of each row, 0 to 1."""
    tile_size: tuple[float, float]

    @property
    def extent(self) -> tuple[float, float]:
        """Metres covered along x and y, border included."""
        ny, nx = self.heights.shape
        return (nx - 1) * self.spacing, (ny - 1) * self.spacing

    @property
    def grid_bounds(self) -> tuple[float, float, float, float]:
        """(x_min, x_max, y_min, y_max) of the tiles, border excluded."""
        rows, cols = self.tile_origins.shape[:2]
        half_x, half_y = rows * self.tile_size[0] / 2, cols * self.tile_size[1] / 2
        return -half_x, half_x, -half_y, half_y


MAX_SAMPLES = 2e7
"""The most height samples a terrain may have: the default grid has 1.4 million; 2e7 take 80 MB per copy."""


def check_terrain(cfg: TerrainCfg) -> None:
    """The grid's own settings (each type's parameters are checked when its tiles are made)."""
    for key in ("num_rows", "num_cols"):
        value = getattr(cfg, key)
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"env.terrain.{key}={value!r}: must be an integer >= 1 (a grid needs tiles)")
    size = list(cfg.tile_size) if isinstance(cfg.tile_size, (list, tuple)) else [cfg.tile_size]
    if len(size) != 2 or not all(isinstance(s, (int, float)) and math.isfinite(s) and s > 0 for s in size):
        raise ValueError(f"env.terrain.tile_size={size}: expected [x, y], two positive lengths in metres")
    h = cfg.horizontal_scale
    if not (isinstance(h, (int, float)) and math.isfinite(h) and h > 0):
        raise ValueError(f"env.terrain.horizontal_scale={h!r}: must be a positive length in metres")
    for key, length in (("tile_size", size[0]), ("tile_size", size[1]), ("border_width", cfg.border_width)):
        samples = length / h
        if abs(samples - round(samples)) > 1e-6:
            raise ValueError(f"env.terrain.{key}={length}: must be a multiple of horizontal_scale={h}")
    if min(size) / h < 4:
        raise ValueError(f"env.terrain.tile_size={size}: a tile needs at least 4 samples of horizontal_scale={h}")
    if cfg.border_width < 0:
        raise ValueError(f"env.terrain.border_width={cfg.border_width}: must be >= 0")
    samples = (cfg.num_rows * size[0] + 2 * cfg.border_width) * (cfg.num_cols * size[1] + 2 * cfg.border_width) / h**2
    if samples > MAX_SAMPLES:
        raise ValueError(
            f"env.terrain: {cfg.num_rows} x {cfg.num_cols} tiles of {size} m at {h} m make {samples:.3g} height "
            f"samples, over the {MAX_SAMPLES:.0e} a terrain may have (each physics variant holds a copy): fewer or "
            "smaller tiles, or a coarser env.terrain.horizontal_scale"
        )
    if not isinstance(cfg.max_init_level, int) or cfg.max_init_level < 0:
        raise ValueError(f"env.terrain.max_init_level={cfg.max_init_level!r}: must be an integer >= 0")
    if not cfg.types:
        raise ValueError("env.terrain.types is empty: declare at least one terrain type")
    for name, t in cfg.types.items():
        if not (isinstance(t.proportion, (int, float)) and math.isfinite(t.proportion) and t.proportion >= 0):
            raise ValueError(f"env.terrain.types.{name}.proportion={t.proportion!r}: must be a number >= 0")
        if t.geometry not in GEOMETRIES:
            raise ValueError(f"env.terrain.types.{name}.geometry={t.geometry!r}: must be one of {list(GEOMETRIES)}")
    if sum(t.proportion for t in cfg.types.values()) <= 0:
        raise ValueError("env.terrain.types: the proportions sum to 0 (give at least one type a positive share)")


def column_types(cfg: TerrainCfg) -> list[str]:
    """Each column's type: the types in declaration order, each over its share of the columns (a type with a share
    at all gets at least one column while there are columns to give)."""
    names = [n for n, t in cfg.types.items() if t.proportion > 0]
    shares = np.array([cfg.types[n].proportion for n in names], dtype=float)
    bounds = np.cumsum(shares / shares.sum())
    return [
        names[min(int(np.searchsorted(bounds, (c + 0.5) / cfg.num_cols)), len(names) - 1)] for c in range(cfg.num_cols)
    ]


def generate(cfg: TerrainCfg) -> TerrainMap:
    """The terrain of ``cfg``: the same config gives the same heights, byte for byte."""
    check_terrain(cfg)
    h = float(cfg.horizontal_scale)
    tnx, tny = round(cfg.tile_size[0] / h), round(cfg.tile_size[1] / h)
    border = round(cfg.border_width / h)
    nx, ny = cfg.num_rows * tnx + 2 * border + 1, cfg.num_cols * tny + 2 * border + 1
    heights = np.zeros((ny, nx), dtype=np.float64)
    # Vertex coordinates within a tile (x along rows of the grid, y along its columns).
    y_local, x_local = np.meshgrid(np.arange(tny + 1) * h, np.arange(tnx + 1) * h, indexing="ij")
    names = column_types(cfg)
    funcs = {}
    for name in set(names):
        key = f"env.terrain.types.{name}"
        funcs[name] = bind(resolve_func(cfg.types[name].func, key, TILES_MODULE), dict(cfg.types[name].params), key, 4)
    difficulty = np.linspace(0.0, 1.0, cfg.num_rows) if cfg.num_rows > 1 else np.ones(1)
    origins = np.zeros((cfg.num_rows, cfg.num_cols, 3), dtype=np.float32)
    x0, y0 = -(nx - 1) * h / 2, -(ny - 1) * h / 2
    stepped = np.zeros((ny, nx), dtype=bool)
    box_tiles_at = []  # (r0, c0, key, func) of each box tile
    for row in range(cfg.num_rows):
        for col, name in enumerate(names):
            rng = np.random.default_rng([cfg.seed, row, col])
            key = f"env.terrain.types.{name}"
            tile = _make_tile(funcs[name], key, rng, float(difficulty[row]), x_local, y_local)
            r0, c0 = border + col * tny, border + row * tnx
            heights[r0 : r0 + tny + 1, c0 : c0 + tnx + 1] = tile
            centre = (r0 + tny // 2, c0 + tnx // 2)
            origins[row, col] = (x0 + centre[1] * h, y0 + centre[0] * h, heights[centre])
            if cfg.types[name].geometry == "boxes":
                box_tiles_at.append((r0, c0, key, str(cfg.types[name].func)))
                stepped[r0 + 1 : r0 + tny, c0 + 1 : c0 + tnx] = True
    # The field is sunk and the boxes made once every tile is in place: a tile's outer samples are its neighbours'.
    heights = heights.astype(np.float32).astype(np.float64)  # the boxes stand at the heights the scan reads
    field = box_tiles.sink_under_boxes(heights, stepped) if box_tiles_at else heights
    boxes = []
    for r0, c0, key, func in box_tiles_at:
        tile_boxes = box_tiles.tile_boxes(heights[r0 : r0 + tny + 1, c0 : c0 + tnx + 1], key, func)
        boxes.append(box_tiles.box_geoms(tile_boxes, field, (r0, c0), (tny + 1, tnx + 1), h, (x0, y0)))
    return TerrainMap(
        heights=heights.astype(np.float32),
        field_heights=field.astype(np.float32),
        boxes=(np.concatenate(boxes) if boxes else np.zeros((0, 6))).astype(np.float32),
        stepped=stepped,
        spacing=h,
        origin=(x0, y0),
        tile_origins=origins,
        type_names=names,
        difficulty=difficulty.astype(np.float32),
        tile_size=(float(cfg.tile_size[0]), float(cfg.tile_size[1])),
    )


def _make_tile(func, key: str, rng, difficulty: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    tile = np.asarray(guarded(key, func, rng, difficulty, x, y), dtype=np.float64)
    if tile.shape != x.shape or not np.isfinite(tile).all():
        raise TermError(f"{key}: returned {tile.shape} heights (finite ones wanted, shaped like x: {x.shape})")
    return tile
