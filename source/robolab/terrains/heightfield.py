"""A ``TerrainMap`` as MuJoCo's ground: height-field geoms replacing the model's floor plane, one per tile (and per
strip of border), and the box geoms of its box tiles (``robolab.terrains.boxes``).

Height fields, not a geom per bump: MuJoCo C and MuJoCo Warp test each robot geom against the few height-field cells
beneath it, however many tiles there are; only stepped tiles (stairs) add boxes, 6 to 21 a tile (docs/terrain.md has
the cost of each). A field per tile, not one for the terrain: ``field_chunks`` says why. MuJoCo stores a height field
as values in [0, 1] scaled by an elevation, over a base of some thickness.
"""

from __future__ import annotations

import itertools

import mujoco
import numpy as np

from robolab.terrains.generator import TerrainMap

TERRAIN_GEOM = "terrain"
BOX_GEOM_PREFIX = "terrain_box_"
BASE_THICKNESS = 1.0
"""Metres of solid ground below the lowest point (a foot cannot fall through the bottom of the field)."""
CHUNK_SAMPLES = 80
"""Samples along a side of one height-field geom (8 m at the default 0.1 m spacing: a tile's size)."""


def replace_floor(spec: mujoco.MjSpec, terrain: TerrainMap) -> None:
    """Delete the world's plane geoms and add the terrain's height fields and boxes, with the first plane's contact
    settings (collision filter, friction, rgba)."""
    planes = [g for g in spec.worldbody.geoms if g.type == mujoco.mjtGeom.mjGEOM_PLANE]
    template = {}
    if planes:
        first = planes[0]
        template = {
            "contype": first.contype,
            "conaffinity": first.conaffinity,
            "friction": np.array(first.friction),
            "condim": first.condim,
            "rgba": np.array(first.rgba),
        }
    for plane in planes:
        spec.delete(plane)
    for name, size, pos, nrow, ncol, data in field_chunks(terrain):
        spec.add_hfield(name=name, size=size, nrow=nrow, ncol=ncol, userdata=data)
        spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname=name, pos=pos, **template)
    for i, (x, y, z, hx, hy, hz) in enumerate(terrain.boxes.astype(np.float64).tolist()):
        spec.worldbody.add_geom(
            name=f"{BOX_GEOM_PREFIX}{i}", type=mujoco.mjtGeom.mjGEOM_BOX, pos=[x, y, z], size=[hx, hy, hz], **template
        )


def field_chunks(terrain: TerrainMap, max_samples: int = CHUNK_SAMPLES):
    """The height field cut along the tiles' edges (and the border's) into pieces of at most ``max_samples`` + 1
    samples a side that share their edge samples (no seam): ``(name, size, pos, nrow, ncol, userdata)`` of each, its
    heights in [0, 1] over its own span. A robot at a tile's centre stands on one piece, as on one field.

    Why not one field: MuJoCo Warp's height-field collision works in the field's own frame in float32, and far from a
    large field's centre it makes contacts metres deep that throw a robot into the air (a G1 on the default 86 x 166
    m terrain: about one diverged episode in four under random actions; none on a 22 m field; docs/terrain.md)."""
    field = terrain.field_heights
    ny, nx = field.shape
    x0, y0 = terrain.origin
    x_min, _, y_min, _ = terrain.grid_bounds
    rows_of_tiles, cols_of_tiles = terrain.tile_origins.shape[:2]
    # Tiles run along x by row (difficulty) and along y by column (type); height samples run along x by column.
    step_x, step_y = (size / terrain.spacing for size in terrain.tile_size)
    col_cuts = _cuts(nx, (x_min - x0) / terrain.spacing, step_x, rows_of_tiles, max_samples)
    row_cuts = _cuts(ny, (y_min - y0) / terrain.spacing, step_y, cols_of_tiles, max_samples)
    single = len(row_cuts) == len(col_cuts) == 2
    for i, (r0, r1) in enumerate(itertools.pairwise(row_cuts)):
        for j, (c0, c1) in enumerate(itertools.pairwise(col_cuts)):
            chunk = field[r0 : r1 + 1, c0 : c1 + 1].astype(np.float64)
            low, high = float(chunk.min()), float(chunk.max())
            elevation = max(high - low, 1e-3)
            half_x, half_y = (c1 - c0) * terrain.spacing / 2, (r1 - r0) * terrain.spacing / 2
            pos = [x0 + c0 * terrain.spacing + half_x, y0 + r0 * terrain.spacing + half_y, low]
            name = TERRAIN_GEOM if single else f"{TERRAIN_GEOM}_{i}_{j}"
            data = ((chunk - low) / elevation).ravel().tolist()
            yield name, [half_x, half_y, elevation, BASE_THICKNESS], pos, r1 - r0 + 1, c1 - c0 + 1, data


def _cuts(samples: int, first: float, step: float, count: int, max_samples: int) -> list[int]:
    """Sample indices where pieces meet along one axis: the ends, the tiles' edges (``count`` tiles of ``step``
    samples from ``first``), and enough between them that no piece spans more than ``max_samples``."""
    edges = sorted({0, samples - 1, *(round(first + k * step) for k in range(count + 1))})
    edges = [e for e in edges if 0 <= e <= samples - 1]
    cuts = [edges[0]]
    for end in edges[1:]:
        pieces = -(-(end - cuts[-1]) // max_samples)  # ceil
        start = cuts[-1]
        cuts += [start + (end - start) * k // pieces for k in range(1, pieces + 1)]
    return cuts
