"""An offline Isaac Lab asset root: robolab's Go2-class robot as USD, and a ground plane.

Isaac Lab resolves robot and ground USD files under ``ISAACSIM_ASSET_ROOT`` (default: NVIDIA's asset
server). Clusters without internet point that variable at a tree written by
``python scripts/isaac_asset_root.py --root DIR``: it holds

- ``Isaac/IsaacLab/Robots/Unitree/Go2/go2.usd``: robolab's Go2-class robot (``robolab.assets.go2``), its MJCF
  converted with ``mujoco-usd-converter`` and every rigid body moved directly under the robot prim, the layout
  Isaac Lab's Go2 task expects (``Robot/base``, ``Robot/.*_foot``); joints, names and masses are robolab's;
- ``Isaac/IsaacLab/Environments/Grid/default_ground_plane_checker_v1/default_ground_plane.usda``: a collision
  plane, for flat terrain.

Isaac Lab's ANYmal and G1 assets are not in the tree (robolab has no models of them): those tasks need the real
asset root. Rough terrain is generated procedurally and needs no file.
"""

from __future__ import annotations

import os
import tempfile

ROBOT_USD = "Isaac/IsaacLab/Robots/Unitree/Go2/go2.usd"
GROUND_USD = "Isaac/IsaacLab/Environments/Grid/default_ground_plane_checker_v1/default_ground_plane.usda"


def write_asset_tree(root: str) -> list[str]:
    """Write the tree under ``root`` (files are replaced atomically) and return the written paths."""
    robot, ground = os.path.join(root, ROBOT_USD), os.path.join(root, GROUND_USD)
    write_robot_usd(robot)
    write_ground_usd(ground)
    return [robot, ground]


def robot_mjcf() -> str:
    """The built-in robot as MJCF, without the floor and actuators (Isaac Lab brings both)."""
    import mujoco

    from robolab.assets.go2 import build_go2_spec
    from robolab.tasks.velocity.go2.env_cfgs import go2_robot_cfg

    spec = build_go2_spec(go2_robot_cfg())
    for actuator in list(spec.actuators):
        spec.delete(actuator)
    for geom in list(spec.worldbody.geoms):
        if geom.type == mujoco.mjtGeom.mjGEOM_PLANE:
            spec.delete(geom)
    return spec.to_xml()


def write_robot_usd(path: str) -> None:
    """Write the built-in Go2-class robot as a USD file (converted from its MJCF)."""
    import mujoco_usd_converter
    from pxr import Usd

    with tempfile.TemporaryDirectory() as tmp:
        mjcf = os.path.join(tmp, "go2.xml")
        with open(mjcf, "w") as f:
            f.write(robot_mjcf())
        converted = mujoco_usd_converter.Converter(layer_structure=False, scene=False).convert(mjcf, tmp).path
        stage = Usd.Stage.Open(converted)
        flatten_bodies(stage)
        _export_atomic(stage, path)


def flatten_bodies(stage) -> None:
    """Move every rigid body to be a direct child of the default prim, keeping its world pose.

    The converter nests bodies like the MJCF tree (``Geometry/base/FL_hip/...``); Isaac Lab's velocity tasks
    address them as ``Robot/<body>``. Joint relationships follow the moves (``Usd.NamespaceEditor``).
    """
    from pxr import Usd, UsdGeom, UsdPhysics

    root = stage.GetDefaultPrim()
    bodies = [p for p in stage.Traverse() if p.HasAPI(UsdPhysics.RigidBodyAPI)]
    cache = UsdGeom.XformCache()
    world = {p.GetPath(): cache.GetLocalToWorldTransform(p) for p in bodies}
    editor = Usd.NamespaceEditor(stage)
    for prim in sorted(bodies, key=lambda p: -p.GetPath().pathElementCount):  # children before their parents
        target = root.GetPath().AppendChild(prim.GetName())
        if prim.GetPath() == target:
            continue
        pose = world[prim.GetPath()]
        if not (editor.MovePrimAtPath(prim.GetPath(), target) and editor.ApplyEdits()):
            raise RuntimeError(f"could not move {prim.GetPath()} to {target}")
        xform = UsdGeom.Xformable(stage.GetPrimAtPath(target))
        xform.ClearXformOpOrder()
        xform.AddTransformOp().Set(pose)


def write_ground_usd(path: str) -> None:
    """Write a flat ground plane with a collider as a USD file."""
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    top = UsdGeom.Xform.Define(stage, "/GroundPlane")
    stage.SetDefaultPrim(top.GetPrim())
    plane = UsdGeom.Plane.Define(stage, "/GroundPlane/CollisionPlane")  # Isaac Lab binds friction to the Plane
    plane.CreateAxisAttr(UsdGeom.Tokens.z)
    plane.CreateWidthAttr(100.0)
    plane.CreateLengthAttr(100.0)
    UsdPhysics.CollisionAPI.Apply(plane.GetPrim())
    _export_atomic(stage, path)


def _export_atomic(stage, path: str) -> None:
    """Export next to ``path`` and rename, so a reader never sees half a file."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    base, ext = os.path.splitext(path)
    tmp = f"{base}.tmp-{os.getpid()}{ext}"
    try:
        if not stage.GetRootLayer().Export(tmp):
            raise RuntimeError(f"USD export to {tmp} failed")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
