"""Watching a policy live: MuJoCo's own viewer on a desktop, a web page (viser) on a headless GPU node.

Both show the embedded tasks' MuJoCo state; ``play.py --viewer`` steps the policy and calls ``update`` once per
control step. The web page draws every visible geom of the first ``num_shown`` envs side by side (2 m apart; on a
generated terrain, each where it stands, on the terrain's mesh), follows env 0 with the camera and shows each shown
env's velocity command and tracking error.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from robolab.terrains.boxes import sink_under_boxes

SPACING_M = 2.0  # envs share one world frame in the embedded backend; shown side by side instead


def pick_viewer(requested: str) -> str:
    """``auto``: MuJoCo's window where there is a display, else the web page."""
    if requested == "auto":
        return "native" if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") else "web"
    if requested not in ("native", "web"):
        raise ValueError(f"--viewer={requested!r}: allowed: auto, native, web")
    return requested


def geom_mesh(model, geom_id: int):
    """A trimesh of one MuJoCo geom in its own frame; None for planes (drawn as the grid) and unknown types."""
    import mujoco
    import trimesh

    kind, size = int(model.geom_type[geom_id]), model.geom_size[geom_id]
    t = mujoco.mjtGeom
    if kind == t.mjGEOM_SPHERE:
        return trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    if kind == t.mjGEOM_ELLIPSOID:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        mesh.apply_scale(size[:3])
        return mesh
    if kind == t.mjGEOM_CAPSULE:
        return trimesh.creation.capsule(height=2 * size[1], radius=size[0], count=[12, 12])
    if kind == t.mjGEOM_CYLINDER:
        return trimesh.creation.cylinder(radius=size[0], height=2 * size[1], sections=16)
    if kind == t.mjGEOM_BOX:
        return trimesh.creation.box(extents=2 * size[:3])
    if kind == t.mjGEOM_MESH:
        mesh_id = int(model.geom_dataid[geom_id])
        v0, nv = int(model.mesh_vertadr[mesh_id]), int(model.mesh_vertnum[mesh_id])
        f0, nf = int(model.mesh_faceadr[mesh_id]), int(model.mesh_facenum[mesh_id])
        return trimesh.Trimesh(model.mesh_vert[v0 : v0 + nv], model.mesh_face[f0 : f0 + nf], process=False)
    return None


TERRAIN_MESH_VERTICES = 400_000
"""At most this many vertices of a generated terrain go to the browser (the map is sampled down to fit)."""


def terrain_mesh(terrain, max_vertices: int = TERRAIN_MESH_VERTICES):
    """(vertices, faces) of a ``TerrainMap``'s ground as the physics holds it: the height field (sampled down to fit
    ``max_vertices`` with the boxes) and the box tiles' boxes (vertical risers)."""
    boxes = terrain.boxes
    budget = max_vertices - 8 * len(boxes)
    field = terrain.field_heights
    stride = 1
    while (field.shape[0] // stride + 1) * (field.shape[1] // stride + 1) > budget:
        stride += 1
    if stride > 1 and len(boxes):  # sunk deeper under the boxes, so a coarse triangle cannot reach over a box top
        field = sink_under_boxes(field, terrain.stepped, radius=stride)
    h = field[::stride, ::stride]
    ny, nx = h.shape
    x0, y0 = terrain.origin
    ys, xs = np.meshgrid(
        y0 + np.arange(ny) * stride * terrain.spacing, x0 + np.arange(nx) * stride * terrain.spacing, indexing="ij"
    )
    vertices = np.stack([xs, ys, h], axis=-1).reshape(-1, 3).astype(np.float32)
    corner = (np.arange(ny - 1)[:, None] * nx + np.arange(nx - 1)[None, :]).ravel()
    # MuJoCo's split of each cell: along the diagonal from its (row, col) to its (row + 1, col + 1) corner
    faces = np.concatenate(
        [np.stack([corner, corner + 1, corner + nx + 1], 1), np.stack([corner, corner + nx + 1, corner + nx], 1)]
    ).astype(np.uint32)
    box_vertices, box_faces = _box_meshes(boxes)
    return np.concatenate([vertices, box_vertices]), np.concatenate([faces, box_faces + len(vertices)])


# A box's 8 corners (x, y, z signs) and its 12 outward-facing triangles.
_BOX_CORNERS = np.array([[sx, sy, sz] for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)], dtype=np.float32)
_BOX_FACES = np.array(
    [[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4], [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6],
     [1, 3, 5], [3, 7, 5]],
    dtype=np.uint32,
)  # fmt: skip


def _box_meshes(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(8 n, 3) vertices and (12 n, 3) faces of n boxes ``(x, y, z, half_x, half_y, half_z)``."""
    vertices = boxes[:, None, :3] + _BOX_CORNERS[None] * boxes[:, None, 3:]
    faces = _BOX_FACES[None] + 8 * np.arange(len(boxes), dtype=np.uint32)[:, None, None]
    return vertices.reshape(-1, 3).astype(np.float32), faces.reshape(-1, 3)


class WebViewer:
    """A viser server showing the robots; open ``http://<host>:<port>`` in a browser.

    It listens on the loopback interface by default: the page has no login, and anyone who can reach the port can
    watch (and, through viser's websocket, send it messages). On a remote node, ``ssh -L`` forwards it to you;
    ``host="0.0.0.0"`` (``play.py --viewer_host 0.0.0.0``) opens it to every network the node is on."""

    def __init__(self, env, port: int = 8080, host: str = "127.0.0.1", num_shown: int = 4):
        import viser

        self.host = host
        self.env = env
        self.env_ids = list(range(min(num_shown, env.num_envs)))
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        terrain = getattr(env, "terrain", None)
        # On a generated terrain every env stands on its own tile: drawn where it is, on the terrain's mesh. On a
        # flat floor all envs share the origin, so they are drawn side by side instead.
        self.spacing = 0.0 if terrain is not None else SPACING_M
        self.terrain = None
        if terrain is None:
            self.server.scene.add_grid("/ground", width=40.0, height=40.0, cell_size=0.5)
        else:
            vertices, faces = terrain_mesh(terrain.map)
            self.terrain = self.server.scene.add_mesh_simple(
                "/terrain", vertices=vertices, faces=faces, color=(150, 160, 140)
            )
        model, _ = env.backend.render_data(0)
        self.geoms: dict[int, list[tuple[int, object]]] = {env_id: [] for env_id in self.env_ids}  # (geom, handle)
        for env_id in self.env_ids:
            for geom_id in range(model.ngeom):
                rgba = model.geom_rgba[geom_id]
                mesh = geom_mesh(model, geom_id) if rgba[3] > 0 and model.geom_group[geom_id] < 3 else None
                if mesh is None:
                    continue
                handle = self.server.scene.add_mesh_simple(
                    f"/env{env_id}/geom{geom_id}",
                    vertices=np.asarray(mesh.vertices, dtype=np.float32),
                    faces=np.asarray(mesh.faces, dtype=np.uint32),
                    color=(np.asarray(rgba[:3]) * 255).astype(np.uint8),
                )
                self.geoms[env_id].append((geom_id, handle))
        self.status = self.server.gui.add_markdown("starting")
        self.frames = 0

    @property
    def url(self) -> str:
        shown = "localhost" if self.host in ("127.0.0.1", "localhost", "::1") else self.host
        return f"http://{shown}:{self.server.get_port()}"

    def set_terrain_visible(self, visible: bool) -> None:
        if self.terrain is not None:
            self.terrain.visible = visible  # type: ignore[attr-defined]

    def set_robot_visible(self, visible: bool) -> None:
        for shown in self.geoms.values():
            for _, handle in shown:
                handle.visible = visible  # type: ignore[attr-defined]

    def update(self, commands, errors) -> None:
        """Move every geom to its env's current pose; show commands (vx, vy, wz) and tracking errors (m/s)."""
        import mujoco

        quat = np.zeros(4)
        follow = None
        with self.server.atomic():
            for env_id in self.env_ids:
                _, data = self.env.backend.render_data(env_id)
                offset = np.array([0.0, self.spacing * env_id, 0.0])
                if env_id == 0:
                    follow = data.qpos[:3].copy()
                for geom_id, handle in self.geoms[env_id]:
                    mujoco.mju_mat2Quat(quat, data.geom_xmat[geom_id])
                    handle.position = data.geom_xpos[geom_id] + offset  # type: ignore[attr-defined]
                    handle.wxyz = quat.copy()  # type: ignore[attr-defined]
            rows = [
                f"| {i} | {commands[i][0]:+.2f} {commands[i][1]:+.2f} {commands[i][2]:+.2f} | {errors[i]:.3f} |"
                for i in self.env_ids
            ]
            self.status.content = "| env | command vx vy wz | error m/s |\n|---|---|---|\n" + "\n".join(rows)
        if follow is not None:
            for client in self.server.get_clients().values():
                client.camera.look_at = follow
                client.camera.position = follow + np.array([-1.2, -1.2, 0.8])
        self.frames += 1

    def close(self) -> None:
        self.server.stop()


class NativeViewer:
    """MuJoCo's own passive viewer window on env 0."""

    def __init__(self, env):
        import mujoco.viewer

        self.env = env
        model, data = env.backend.render_data(0)
        self.data = data
        before = set(threading.enumerate())
        self.handle = mujoco.viewer.launch_passive(model, data)
        # MuJoCo's handle keeps no reference to the thread that runs the window: the new thread is it.
        self._window_threads = [t for t in threading.enumerate() if t not in before]
        self.frames = 0

    def update(self, commands, errors) -> None:
        if not self.handle.is_running():  # the window was closed: keep evaluating without it
            return
        self.env.backend.render_data(0)  # refreshes the shown MjData in place
        self.handle.sync()
        self.frames += 1

    def close(self) -> None:
        self.handle.close()
        # The window's thread destroys its GLFW window after the exit request; tearing the interpreter down under
        # it crashes GLFW (a segfault at exit under load), so wait for that thread to end.
        for thread in self._window_threads:
            thread.join(timeout=10.0)
