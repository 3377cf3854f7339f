"""What a ray-cast sensor sees: the model's static geometry (the world body's geoms and those welded to it: the
generated terrain's height field, a user's scene meshes, planes and boxes), never the robot.

Both backends cast into one kinematic copy of the model whose free bodies (the robot) sit far below everything, so
the same rays meet the same surfaces on MuJoCo C (``mj_multiRay``) and MuJoCo Warp (``mujoco_warp.rays``). Moving
bodies other than the robot are not seen where the envs have them, only at their initial pose: a scan senses the
ground, as Isaac Lab's ray caster does (it casts against static meshes only).

MuJoCo's ray functions skip invisible geoms (alpha 0 in the geom's or its material's colour): a collision-only
terrain must be visible to be scanned.
"""

from __future__ import annotations

import mujoco
import numpy as np

OUT_OF_THE_WAY = 1.0e4
"""How far (m) below the world the free bodies are put in the scanned copy: beyond any ray's reach."""


def static_scene_data(model: mujoco.MjModel) -> mujoco.MjData:
    """An MjData of ``model`` with its free bodies moved ``OUT_OF_THE_WAY`` m down and the kinematics computed: a
    ray that travels less than that meets only the static geoms."""
    data = mujoco.MjData(model)
    for joint in np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE):
        data.qpos[model.jnt_qposadr[joint] + 2] = -OUT_OF_THE_WAY
    mujoco.mj_kinematics(model, data)
    return data


def check_max_distance(max_distance: float) -> None:
    """Refuse a ray length that is not between 0 and the out-of-the-way height."""
    if not 0 < max_distance < OUT_OF_THE_WAY:
        raise ValueError(f"max_distance={max_distance}: rays must reach between 0 and {OUT_OF_THE_WAY:g} m")
