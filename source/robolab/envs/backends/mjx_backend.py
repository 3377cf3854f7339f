"""MuJoCo MJX backend: every env stepped on the accelerator by one jit-compiled JAX function.

The batched ``mjx.Data`` stays on the device. One compiled call per control step applies the PD targets and
runs ``decimation`` physics steps (a ``lax.scan``), and also returns what the MDP reads: the peak per-body
contact force over the step (already split by body group), actuator torques and foot positions in the base
frame. A reset, readings included, is one compiled call too: each eager JAX operation issued from Python is a
separate GPU dispatch, and a handful per control step cost a third of it (docs/benchmarks/README.md). Tensors cross
between torch and JAX through DLPack, so on a GPU nothing is copied to the host. Friction and base mass are per-env
fields of a batched model (``vmap`` over those two fields only), drawn per variant like the mujoco backend.

The first backend built sets up JAX for sharing the GPU with torch (``configure_jax``): nothing is changed when
this module is merely imported.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import torch
from mujoco import mjx

from robolab.assets import RobotModel
from robolab.envs.backends import mjx_compat
from robolab.envs.backends.base import PhysicsBackend, variant_blocks

_GROUPS = ("foot", "undesired", "termination")
CPU_CHUNK = 64  # envs vectorised together on a JAX CPU device (see _build_step)


def configure_jax() -> None:
    """Before JAX first touches a GPU: no preallocation (torch lives on the same GPU) and a persistent compile cache
    (compiling the batched step takes tens of seconds), each unless the user chose otherwise."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # read when JAX creates its GPU client
    if not os.environ.get("JAX_COMPILATION_CACHE_DIR") and not jax.config.jax_compilation_cache_dir:
        jax.config.update(
            "jax_compilation_cache_dir", os.path.join(os.path.expanduser("~"), ".cache", "robolab", "jax")
        )


def jax_device_for(device: torch.device):
    """The JAX device that holds the same memory as torch's ``device``."""
    if device.type == "cpu":
        return jax.devices("cpu")[0]
    if device.type != "cuda":
        raise ValueError(f"device={str(device)!r}: the mjx backend runs on 'cpu' or 'cuda[:N]'")
    index = torch.cuda.current_device() if device.index is None else device.index
    try:
        gpus = jax.devices("gpu")
    except RuntimeError as err:
        raise RuntimeError(f"device={str(device)!r} but JAX sees no GPU ({err}); install jax[cuda12]") from None
    # Every rank's JAX sees every GPU (restricting it with jax_cuda_visible_devices broke device placement on a
    # second rank); pick the one torch uses by its CUDA ordinal.
    matches = [d for d in gpus if d.local_hardware_id == index] or gpus[index : index + 1]
    if not matches:
        raise RuntimeError(f"device={str(device)!r}: JAX sees GPUs {[d.local_hardware_id for d in gpus]}")
    return matches[0]


def to_jax(tensor: torch.Tensor) -> jax.Array:
    tensor = tensor.detach().contiguous()
    if tensor.is_cuda:  # torch exports a CUDA tensor only while its device is the current one
        with torch.cuda.device(tensor.device):
            return jax.dlpack.from_dlpack(tensor)
    return jax.dlpack.from_dlpack(tensor)


def to_torch(array: jax.Array) -> torch.Tensor:
    return torch.from_dlpack(array)


class Readings(NamedTuple):
    """What the MDP reads after a control step, kept on the device beside ``mjx.Data``.

    Contact forces come one array per body group, computed inside the compiled step: slicing a JAX array
    from Python is an eager dispatch costing about half a millisecond on a GPU, several per control step.
    """

    forces: dict[str, jax.Array]  # group -> (num_envs, bodies in group), peak over the control step
    torques: jax.Array  # (num_envs, joints)
    foot_pos: jax.Array  # (num_envs, feet, 3), base frame
    non_finite: jax.Array  # (num_envs,) bool


class MjxBackend(PhysicsBackend):
    def __init__(self, robot: RobotModel, num_envs: int, device: str = "cpu", num_variants: int | None = 64):
        self.robot = robot
        self.num_envs = num_envs
        self.device = torch.device(device)
        configure_jax()
        self.jax_device = jax_device_for(self.device)
        self.num_variants, variant = variant_blocks(num_envs, num_variants)
        self.variant_of_env = torch.as_tensor(variant, device=self.device)
        self._variant = jax.device_put(variant, self.jax_device)

        model = robot.model
        try:
            self._mx = mjx.put_model(model, device=self.jax_device)
        except NotImplementedError as err:  # an option of the robot model's own that MJX does not simulate
            raise ValueError(
                f"env.backend.name='mjx' cannot simulate this robot model: MJX does not implement {err} "
                "(set by the model's <option> or elements; use env.backend=mujoco, or change it in the model)"
            ) from None
        self._nominal_friction = self._mx.geom_friction  # float32 unless JAX runs with x64 enabled
        self._nominal_mass = self._mx.body_mass
        self._friction = jnp.broadcast_to(self._nominal_friction, (num_envs, *model.geom_friction.shape))
        self._mass = jnp.broadcast_to(self._nominal_mass, (num_envs, model.nbody))
        self._actuator_ids = jnp.asarray(robot.actuator_ids)
        self._groups = {g: jnp.asarray(getattr(robot, f"{g}_body_ids")) for g in _GROUPS}

        data0 = mjx.make_data(self._mx)
        data = jax.device_put(jax.vmap(lambda _: data0)(jnp.arange(num_envs)), self.jax_device)
        # The state is kept as mjx.Data's flat list of arrays: mjx.Data flattens through Python callbacks (three
        # calls per control step), a list of arrays in JAX's C++ (docs/benchmarks/README.md).
        paths, self._treedef = jax.tree_util.tree_flatten_with_path(data)
        self._leaves = [leaf for _, leaf in paths]
        keys = [jax.tree_util.keystr(path) for path, _ in paths]
        self._qpos_leaf, self._qvel_leaf = keys.index(".qpos"), keys.index(".qvel")

        def zeros(*shape, dtype=jnp.float32):
            return jnp.zeros((num_envs, *shape), dtype, device=self.jax_device)

        self._readings = Readings(
            forces={g: zeros(len(ids)) for g, ids in self._groups.items()},
            torques=zeros(len(robot.dof_adr)),
            foot_pos=zeros(len(robot.foot_body_ids), 3),
            non_finite=zeros(dtype=bool),
        )
        self._views: dict[str, tuple[jax.Array, torch.Tensor]] = {}  # name -> (array, its torch view)
        self._step_fns: dict[int, Callable] = {}
        self._reset_fn = self._on_leaves(_reset)
        self._push_fn = self._on_leaves(_set_base_velocity)
        self._render_data: mujoco.MjData | None = None

    def _on_leaves(self, fn):
        """``fn(data, *args) -> (data, *rest)`` compiled as a function of the state's flat list of arrays."""
        treedef = self._treedef

        def on_leaves(leaves, *args):
            data, *rest = fn(treedef.unflatten(leaves), *args)
            return (treedef.flatten_up_to(data), *rest)

        return jax.jit(on_leaves)

    @property
    def _data(self) -> mjx.Data:
        """The batched state as ``mjx.Data`` (rendering, fault injection, tests; the hot path uses the leaves)."""
        return self._treedef.unflatten(self._leaves)

    # --- stepping -------------------------------------------------------------------------------------
    def step(self, joint_targets: torch.Tensor, decimation: int) -> None:
        if decimation not in self._step_fns:
            self._step_fns[decimation] = self._on_leaves(self._build_step(decimation))
        targets = to_jax(joint_targets.to(torch.float32))
        self._leaves, self._readings = self._step_fns[decimation](self._leaves, self._friction, self._mass, targets)

    def _build_step(self, decimation: int):
        mx, robot, groups = self._mx, self.robot, self._groups
        actuator_ids, dof_adr = self._actuator_ids, jnp.asarray(robot.dof_adr)
        base, feet = robot.base_body_id, jnp.asarray(robot.foot_body_ids)
        bodies = jnp.concatenate(list(groups.values()))
        splits = np.cumsum([len(ids) for ids in groups.values()])[:-1]

        def env_step(data, friction, mass, targets):
            model: mjx.Model = mx.tree_replace({"geom_friction": friction, "body_mass": mass})  # pyright: ignore[reportAssignmentType]
            data = data.replace(ctrl=data.ctrl.at[actuator_ids].set(targets))

            def physics_step(d, _):
                d = mjx.step(model, d)
                return d, body_contact_force_norms(model, d, bodies)

            data, forces = jax.lax.scan(physics_step, data, None, length=decimation)
            # Read after the last physics step from positions before its integration, like MuJoCo's sensors.
            rot = data.xmat[base]
            foot_pos = (data.xpos[feet] - data.xpos[base]) @ rot
            torques = data.qfrc_actuator[dof_adr]
            peak = forces.max(axis=0)
            finite = (
                jnp.isfinite(data.qpos).all()
                & jnp.isfinite(data.qvel).all()
                & jnp.isfinite(peak).all()
                & jnp.isfinite(torques).all()
            )
            by_group = dict(zip(groups, jnp.split(peak, splits)))
            return data, Readings(forces=by_group, torques=torques, foot_pos=foot_pos, non_finite=~finite)

        batched = jax.vmap(env_step)
        if self.jax_device.platform != "cpu":
            return batched
        # On the CPU, JAX's batched LAPACK Cholesky splits large batches over the XLA thread pool, and two of
        # them running at once (MJX factorises in the solver and in the implicit integrator) can deadlock a
        # small pool (docs/benchmarks/README.md). Vectorise in chunks below the size where that was seen.
        n = self.num_envs
        chunk = max(c for c in range(1, min(CPU_CHUNK, n) + 1) if n % c == 0)

        def chunked(*args):
            split = jax.tree.map(lambda x: x.reshape((n // chunk, chunk, *x.shape[1:])), args)
            out = jax.lax.map(lambda a: batched(*a), split)
            return jax.tree.map(lambda x: x.reshape((n, *x.shape[2:])), out)

        return chunked

    # --- reads (DLPack views of device arrays; no host copy) ------------------------------------------
    def _view(self, name: str, array: jax.Array) -> torch.Tensor:
        """A torch view of ``array``, made once per array (the MDP reads each several times per step)."""
        cached = self._views.get(name)
        if cached is None or cached[0] is not array:
            cached = self._views[name] = (array, to_torch(array))
        return cached[1]

    @property
    def qpos(self) -> torch.Tensor:
        return self._view("qpos", self._leaves[self._qpos_leaf])

    @property
    def qvel(self) -> torch.Tensor:
        return self._view("qvel", self._leaves[self._qvel_leaf])

    def contact_forces(self, group: str) -> torch.Tensor:
        return self._view(group, self._readings.forces[group])

    @property
    def joint_torques(self) -> torch.Tensor:
        return self._view("torques", self._readings.torques)

    @property
    def foot_positions(self) -> torch.Tensor:
        return self._view("foot_pos", self._readings.foot_pos)

    @property
    def non_finite(self) -> torch.Tensor:
        return self._view("non_finite", self._readings.non_finite)

    # --- writes (on the device, masked so shapes stay static and nothing recompiles) -------------------
    def _rows(self, env_ids: torch.Tensor, *values: torch.Tensor) -> jax.Array:
        """One (num_envs, 1 + widths) array: column 0 marks ``env_ids``, their rows hold ``values`` side by side.

        One array, so one DLPack hand-over per write (each costs tens of microseconds of Python).
        """
        width = 1 + sum(v.shape[1] for v in values)
        full = torch.zeros(self.num_envs, width, dtype=torch.float32, device=self.device)
        full[env_ids.to(self.device)] = torch.cat(
            [torch.ones(len(env_ids), 1, device=self.device), *(v.to(self.device, torch.float32) for v in values)],
            dim=1,
        )
        return to_jax(full)

    def reset(self, env_ids: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        if len(env_ids) == 0:
            return
        self._leaves, self._readings = self._reset_fn(self._leaves, self._readings, self._rows(env_ids, qpos, qvel))

    def set_base_velocity(self, env_ids: torch.Tensor, lin_vel_xy: torch.Tensor) -> None:
        if len(env_ids) == 0:
            return
        (self._leaves,) = self._push_fn(self._leaves, self._rows(env_ids, lin_vel_xy))

    def set_friction(self, friction: torch.Tensor) -> None:
        mu = to_jax(friction.to(self.device, torch.float32))[self._variant].astype(self._friction.dtype)
        self._friction = jnp.broadcast_to(self._nominal_friction, self._friction.shape).at[:, :, 0].set(mu[:, None])

    def set_added_base_mass(self, added_mass: torch.Tensor) -> None:
        dm = to_jax(added_mass.to(self.device, torch.float32))[self._variant].astype(self._mass.dtype)
        body = self.robot.base_body_id
        self._mass = jnp.broadcast_to(self._nominal_mass, self._mass.shape).at[:, body].add(dm)

    def render_data(self, env_id: int) -> tuple[mujoco.MjModel, mujoco.MjData]:
        """The MuJoCo model and a forward-computed MjData of one env, for rendering."""
        model = self.robot.model
        if self._render_data is None:
            self._render_data = mujoco.MjData(model)
        self._render_data.qpos[:] = np.asarray(self._data.qpos[env_id])
        self._render_data.qvel[:] = np.asarray(self._data.qvel[env_id])
        mujoco.mj_forward(model, self._render_data)
        return model, self._render_data

    def corrupt(self, env_ids: torch.Tensor) -> None:
        """Make the state of ``env_ids`` non-finite (tests and fault injection)."""
        marked = self._rows(env_ids)[:, :1] > 0.5
        self._leaves[self._qvel_leaf] = jnp.where(marked, jnp.nan, self._leaves[self._qvel_leaf])

    def synchronize(self) -> None:
        jax.block_until_ready((self._leaves, self._readings))

    def device_memory_bytes(self) -> int | None:
        stats = self.jax_device.memory_stats() or {}
        return stats.get("peak_bytes_in_use")

    def close(self) -> None:
        self._step_fns.clear()


def body_contact_force_norms(model: mjx.Model, data: mjx.Data, bodies: jax.Array) -> jax.Array:
    """Norm of the net contact force on each of ``bodies`` (what MuJoCo's net-force contact sensor reports)."""
    contact = mjx_compat.contacts(data)
    dims = sorted({int(d) for d in np.asarray(contact.dim)})
    net = jnp.zeros((len(bodies), 3))
    body_of_geom = jnp.asarray(model.geom_bodyid)
    for dim in dims:
        force, idx = mjx_compat.contact_force_dim(model, data, dim)  # contact frame, rows: normal, tangents
        world = jnp.einsum("ci,cij->cj", force[:, :3], contact.frame[idx])  # force on geom 2 from geom 1
        geom = contact.geom[idx]
        # +1 where the body is the contact's second geom, -1 where it is the first (equal and opposite).
        sign = (body_of_geom[geom[:, 1]][None] == bodies[:, None]).astype(world.dtype) - (
            body_of_geom[geom[:, 0]][None] == bodies[:, None]
        ).astype(world.dtype)
        net = net + sign @ world
    return jnp.linalg.norm(net, axis=-1)


def _reset(data: mjx.Data, readings: Readings, rows: jax.Array) -> tuple[mjx.Data, Readings]:
    """Start the envs marked in ``rows`` (see ``MjxBackend._rows``: mask, qpos, qvel) from that state, with time,
    controls, activations, warm start and readings cleared."""
    nq = data.qpos.shape[1]
    mask, qpos, qvel = rows[:, 0] > 0.5, rows[:, 1 : 1 + nq], rows[:, 1 + nq :]

    def pick(new, old):
        # where, not a multiply by the mask: a diverged env's values are NaN, and NaN * 0 stays NaN.
        return jnp.where(mask.reshape((-1,) + (1,) * (old.ndim - 1)), new, old)

    data = data.replace(
        qpos=pick(qpos, data.qpos),
        qvel=pick(qvel, data.qvel),
        time=pick(0.0, data.time),
        ctrl=pick(0.0, data.ctrl),
        act=pick(0.0, data.act),
        qacc_warmstart=pick(0.0, data.qacc_warmstart),
    )
    return data, jax.tree.map(lambda x: pick(jnp.zeros_like(x), x), readings)


def _set_base_velocity(data: mjx.Data, rows: jax.Array) -> tuple[mjx.Data]:
    """Overwrite the horizontal base velocity of the envs marked in ``rows`` (mask, vx, vy)."""
    mask, lin_vel_xy = rows[:, :1] > 0.5, rows[:, 1:3]
    qvel = data.qvel.at[:, :2].set(jnp.where(mask, lin_vel_xy, data.qvel[:, :2]))
    return (data.replace(qvel=qvel),)
