"""What every robot robolab builds in code shares: the solver options and the floor it stands on.

Collision filter: the floor has contype 0 / conaffinity 1 and a robot's geoms (``collision``) contype 1 /
conaffinity 0, so a robot collides with the floor only, never with itself. That is what a velocity task wants, and
it halves the collision work.
"""

from __future__ import annotations

import mujoco


def set_options(spec: mujoco.MjSpec) -> None:
    """The built-in robots' physics options: a 0.005 s step, the implicit-fast integrator, pyramidal friction cones
    and a light Newton solve."""
    spec.option.timestep = 0.005
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    # A light Newton solve: a few iterations are enough for feet on the ground and keep stepping cheap.
    spec.option.iterations = 4
    spec.option.ls_iterations = 6
    # Leave unstable states non-finite instead of silently resetting them, so the env can count them.
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_AUTORESET
    spec.compiler.degree = False


def add_floor(spec: mujoco.MjSpec) -> None:
    """A flat floor plane with the built-in robots' ground friction."""
    spec.worldbody.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[0, 0, 0.05],
        contype=0,
        conaffinity=1,
        friction=[1.0, 0.005, 0.0001],
        rgba=[0.5, 0.6, 0.7, 1],
    )
    spec.worldbody.add_light(pos=[0, 0, 3], dir=[0, 0, -1], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)


def collision(**kw) -> dict:
    """Geom settings of a robot part that touches the floor (and nothing else)."""
    return {"contype": 1, "conaffinity": 0, **kw}


FOOT_CONTACT = {"priority": 1, "condim": 3, "friction": [1.0, 0.02, 0.01]}
"""A foot's contact: its friction wins over the floor's (priority), no torsional or rolling friction (condim 3)."""
