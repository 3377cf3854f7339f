"""A ``TerrainMap`` as MuJoCo's ground: one height-field geom replacing the model's floor plane, and the box geoms
of its box tiles (``robolab.terrains.boxes``).

One height field for the whole terrain, not a geom per bump: MuJoCo C and MuJoCo Warp test each robot geom against
the few height-field cells beneath it, however many tiles there are; only stepped tiles (stairs) add boxes, 6 to 21
a tile (docs/terrain.md has the cost of each). MuJoCo stores a height field as values in [0, 1] scaled by an
elevation, over a base of some thickness.
"""

from __future__ import annotations

import mujoco
import numpy as np

from robolab.terrains.generator import TerrainMap

TERRAIN_GEOM = "terrain"
BOX_GEOM_PREFIX = "terrain_box_"
BASE_THICKNESS = 1.0
"""Metres of solid ground below the lowest point (a foot cannot fall through the bottom of the field)."""


def replace_floor(spec: mujoco.MjSpec, terrain: TerrainMap) -> None:
    """Delete the world's plane geoms and add the terrain's height field and boxes, with the first plane's contact
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
    field = terrain.field_heights
    low, high = float(field.min()), float(field.max())
    elevation = max(high - low, 1e-3)
    ny, nx = field.shape
    extent_x, extent_y = terrain.extent
    spec.add_hfield(
        name=TERRAIN_GEOM,
        size=[extent_x / 2, extent_y / 2, elevation, BASE_THICKNESS],
        nrow=ny,
        ncol=nx,
        userdata=((field.astype(np.float64) - low) / elevation).ravel().tolist(),
    )
    centre = (terrain.origin[0] + extent_x / 2, terrain.origin[1] + extent_y / 2, low)
    spec.worldbody.add_geom(
        name=TERRAIN_GEOM, type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname=TERRAIN_GEOM, pos=list(centre), **template
    )
    for i, (x, y, z, hx, hy, hz) in enumerate(terrain.boxes.astype(np.float64).tolist()):
        spec.worldbody.add_geom(
            name=f"{BOX_GEOM_PREFIX}{i}", type=mujoco.mjtGeom.mjGEOM_BOX, pos=[x, y, z], size=[hx, hy, hz], **template
        )
