"""MuJoCo Warp backend: every env a world of one batched ``mujoco_warp`` simulation, on a GPU or on warp's CPU device.

The batched state lives in warp arrays; torch reads and writes them through zero-copy views made once
(``wp.to_torch``), so the MDP's resets, pushes and reads never cross to the host. One control step is one CUDA
graph: ``decimation`` physics steps, each followed by a small kernel that keeps the peak contact force of every
robolab contact sensor and flags non-finite worlds. The model carries the same sensors as the MuJoCo C backend's
(``robolab.assets.load_robot``): net contact force per body, joint actuator torques, foot positions in the base
frame, so both backends read the same quantities and the parity tests compare like with like.

The model arrays events randomise (``RANDOMISED_FIELDS``: friction, masses, centres of mass, joint and actuator
parameters) are per-world fields of the model (``put_model``'s ``batch_sizes``), written from each env's variant, so
env ``i`` simulates the same physics variant on every backend.
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from robolab import console
from robolab.assets import RobotModel
from robolab.distributed import check_compile_workers, default_compile_workers
from robolab.envs.backends.base import (
    RANDOMISED_FIELDS,
    PhysicsBackend,
    check_field,
    contact_groups,
    contact_sensor_adr,
    variant_blocks,
)
from robolab.envs.backends.rays import check_max_distance, static_scene_data
from robolab.envs.backends.warp_compile import preload_step_kernels
from robolab.envs.backends.warp_kernels import flag_non_finite_state, track_contact_peaks

# What overflowed -> the setting that sizes it. An env whose buffers overflowed is reset (its physics left contacts
# or constraints out) and counted; the env warns once per check window. The Newton solve's iteration limits are no
# overflow: MuJoCo C stops there silently too.
_OVERFLOW_SETTINGS: dict[int, str] = {
    mjw.OverflowType.NEFC: "env.backend.njmax",
    mjw.OverflowType.NJMAX_NNZ: "env.backend.njmax",
    mjw.OverflowType.BROADPHASE: "env.backend.nconmax",
    mjw.OverflowType.NARROWPHASE: "env.backend.nconmax",
    mjw.OverflowType.CCD: "env.backend.nconmax",
    mjw.OverflowType.HFIELD: "env.terrain.horizontal_scale (fewer height-field cells under a geom)",
}
_CONTACTS_PER_HFIELD_PAIR = 4
"""MuJoCo Warp keeps at most this many contacts of one geom with a height field (collision_convex.py)."""
_CONTACTS_PER_GEOM_ON_BOXES = 8
"""Contacts of one robot geom with a box tile's boxes: two boxes at a riser, up to 4 contacts each."""


def contact_capacity(model: mujoco.MjModel) -> tuple[int | None, int | None]:
    """(nconmax, njmax) for a model on a generated terrain (a height field, and box geoms on its box tiles): every
    robot geom that can touch the ground touching it with MuJoCo Warp's most contacts per height-field pair (and on
    the boxes with two boxes' worth), each contact with its constraint rows, plus every joint limit. The most the
    model can need, so a world never overflows; None (MuJoCo Warp's own estimate) for a model without a height
    field."""
    static = model.geom_bodyid == 0
    hfields = static & (model.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)
    if not hfields.any():
        return None, None
    boxes = static & (model.geom_type == mujoco.mjtGeom.mjGEOM_BOX)
    ground = hfields | boxes
    ground_type = np.bitwise_or.reduce(model.geom_contype[ground])
    ground_affinity = np.bitwise_or.reduce(model.geom_conaffinity[ground])
    moving = model.geom_bodyid != 0
    touches = moving & (((model.geom_contype & ground_affinity) != 0) | ((model.geom_conaffinity & ground_type) != 0))
    # A terrain's height field comes in tile-sized pieces (robolab.terrains.heightfield): a geom smaller than a piece
    # touches at most the four that meet at a corner.
    fields_touched = min(int(hfields.sum()), 4)
    per_geom = _CONTACTS_PER_HFIELD_PAIR * fields_touched + (_CONTACTS_PER_GEOM_ON_BOXES if boxes.any() else 0)
    contacts = int(touches.sum()) * per_geom
    condim = int(model.geom_condim[touches].max(initial=3))
    rows_per_contact = 2 * (condim - 1) if model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL else condim
    limits = int(model.jnt_limited.sum()) + int(model.neq) * 6
    return max(contacts, 1), contacts * rows_per_contact + limits


_rays: Any = mjw.rays  # its warp array annotations (array2d[vec3]) are no types a checker can match


def _ray_buffers(total: int) -> tuple[Any, Any, Any, Any]:
    """Per-ray body exclusions (none: the robot is out of the way) and the outputs: distance, geom, normal."""
    exclude = wp.full(total, -1, dtype=int)
    vec3: Any = wp.vec3
    return exclude, wp.empty((1, total), dtype=float), wp.empty((1, total), dtype=int), wp.empty((1, total), dtype=vec3)


def warp_device_for(device: torch.device) -> wp.context.Device:
    """The warp device that holds the same memory as torch's ``device``."""
    if device.type == "cpu":
        return wp.get_device("cpu")
    if device.type != "cuda":
        raise ValueError(f"device={str(device)!r}: the warp backend runs on 'cpu' or 'cuda[:N]'")
    index = torch.cuda.current_device() if device.index is None else device.index
    return wp.get_device(f"cuda:{index}")


def cached_modules() -> int:
    """How many files warp's kernel cache holds (``WARP_CACHE_PATH`` moves it): a module compiled for one more device
    adds its binary to the module's folder, so files are counted, not folders."""
    directory = wp.config.kernel_cache_dir
    if not directory or not os.path.isdir(directory):
        return 0
    return sum(len(files) for _, _, files in os.walk(directory))


@dataclass
class KernelCacheReport:
    """What loading a backend's kernels found in warp's kernel cache."""

    directory: str
    files_before: int
    files_after: int
    seconds: float
    """Compiling or loading every kernel of a step, and running it once."""
    workers: int = 1
    """Threads that compiled them (``env.backend.compile_workers``; 1: at each kernel's first launch)."""

    @property
    def compiled(self) -> int:
        """Files the load added: compiled kernels (a warm cache adds none)."""
        return max(self.files_after - self.files_before, 0)

    def line(self, task: str) -> str:
        """The start-up line: whether the cache was warm, and how to fill it ahead when it was not."""
        if self.compiled == 0:
            ready = f"kernels ready in {self.seconds:.1f} s"
            return f"MuJoCo Warp kernel cache {self.directory}: warm (nothing to compile; {ready})"
        threads = f"{self.workers} thread{'s' * (self.workers > 1)}"
        return (
            f"MuJoCo Warp kernel cache {self.directory}: cold ({self.compiled} files compiled in "
            f"{self.seconds:.1f} s by {threads}; `scripts/warmup.py --task {task}` fills it ahead, WARP_CACHE_PATH "
            "moves it)"
        )


class WarpBackend(PhysicsBackend):
    """MuJoCo Warp: every env a world of one batched simulation, one CUDA graph per control step, the state read and
    written through zero-copy torch views."""

    overflow_settings: ClassVar[dict[int, str]] = {int(flag): setting for flag, setting in _OVERFLOW_SETTINGS.items()}

    def __init__(
        self,
        robot: RobotModel,
        num_envs: int,
        device: str = "cpu",
        num_variants: int | None = 64,
        nconmax: int | None = None,
        njmax: int | None = None,
        compile_workers: int | None = None,
    ):
        check_compile_workers(compile_workers)
        self.compile_workers = default_compile_workers() if compile_workers is None else compile_workers
        wp.config.log_level = console.warp_log_level()  # module loads only with --verbose
        wp.init()
        self.robot = robot
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.wp_device = warp_device_for(self.device)
        self.num_variants, variant = variant_blocks(num_envs, num_variants)
        self.variant_of_env = torch.as_tensor(variant, device=self.device)

        # mujoco_warp has no auto-reset to disable: a diverged world keeps its NaNs, as with MuJoCo C's flag set.
        model = copy.copy(robot.model)
        model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
        with wp.ScopedDevice(self.wp_device):
            try:
                self._model = mjw.put_model(model, batch_sizes=dict.fromkeys(RANDOMISED_FIELDS, num_envs))
            except NotImplementedError as err:  # a feature of the robot model's own that MuJoCo Warp lacks
                raise ValueError(
                    f"env.backend.name='warp' cannot simulate this robot model (MuJoCo Warp: {str(err).rstrip('.')}; "
                    "set by the model's <option> or elements): use env.backend=mujoco, or change it in the model"
                ) from None
            # robolab reports overflows itself (once per check window, with the setting to raise): no line per step.
            self._model.opt.warn_overflow = 0
            sized_nconmax, sized_njmax = contact_capacity(model)
            self.nconmax = nconmax if nconmax is not None else sized_nconmax
            self.njmax = njmax if njmax is not None else sized_njmax
            self._data = mjw.make_data(model, nworld=num_envs, nconmax=self.nconmax, njmax=self.njmax)
            contact_adr = contact_sensor_adr(robot).astype(np.int32)
            self._contact_adr = wp.array(contact_adr, dtype=int)
            self._peak = wp.zeros((num_envs, len(contact_adr)), dtype=float)
            self._non_finite = wp.zeros(num_envs, dtype=wp.bool)
        self._group_columns = contact_groups(robot)

        # Torch views of the warp arrays: the same memory, made once (the arrays live as long as the backend).
        d, m = self._data, self._model
        self._qpos, self._qvel = wp.to_torch(d.qpos), wp.to_torch(d.qvel)
        self._ctrl, self._sensordata = wp.to_torch(d.ctrl), wp.to_torch(d.sensordata)
        self._resettable = [wp.to_torch(a) for a in (d.time, d.act, d.qacc_warmstart, d.qfrc_applied, d.xfrc_applied)]
        self._peak_view, self._non_finite_view = wp.to_torch(self._peak), wp.to_torch(self._non_finite)
        self._overflow = wp.to_torch(d.overflow)
        self._overflow_bits = int(sum(_OVERFLOW_SETTINGS))
        self._fields = {name: wp.to_torch(getattr(m, name)) for name in RANDOMISED_FIELDS}
        self._actuator_ids = torch.as_tensor(robot.actuator_ids, device=self.device)
        self._torque_adr = torch.as_tensor(robot.torque_sensor_adr, device=self.device)
        self._foot_pos_adr = torch.as_tensor(robot.foot_pos_sensor_adr[:, None] + np.arange(3), device=self.device)
        self._foot_vel_adr = torch.as_tensor(robot.foot_vel_sensor_adr[:, None] + np.arange(3), device=self.device)

        self._vector_adr: dict[str, torch.Tensor] = {}
        self._graphs: dict[tuple[int, bool], wp.context.Graph] = {}
        self._stream = wp.Stream(self.wp_device) if self.wp_device.is_cuda else None
        self._events = (wp.Event(self.wp_device), wp.Event(self.wp_device)) if self.wp_device.is_cuda else None
        self._torch_streams: dict[int, wp.Stream] = {}
        self._external: wp.Stream | None = None
        """Torch's stream while it captures the env's step (``captured``): the physics launches onto it."""
        self._external_graph: wp.context.Graph | None = None
        """What warp allocated in the last such capture, kept while the torch graph that uses it may replay (one
        env step graph lives at a time: a new capture replaces the old graph)."""
        self._render_data: mujoco.MjData | None = None
        self._ray_scene: mjw.Data | None = None
        self._ray_buffers: dict[int, tuple[Any, Any, Any, Any]] = {}
        self._warm_up()

    def _warm_up(self) -> None:
        """Compile every kernel of a step now (a CUDA graph cannot load modules while it captures), then start over
        from the model's initial state. On a cold cache the step's modules compile over ``compile_workers`` threads
        first (``warp_compile.preload_step_kernels``: ``preload``). What it found in warp's kernel cache is
        ``kernel_cache``."""
        cached_before, start = cached_modules(), time.perf_counter()

        def step_and_start_over() -> None:
            self._physics_step(decimation=1)
            mjw.reset_data(self._model, self._data)

        with wp.ScopedDevice(self.wp_device):
            self.preload = preload_step_kernels(step_and_start_over, self.compile_workers)
            step_and_start_over()
            self._peak.zero_()
            self._non_finite.zero_()
            wp.synchronize_device(self.wp_device)
        self.kernel_cache = KernelCacheReport(
            str(wp.config.kernel_cache_dir),
            cached_before,
            cached_modules(),
            time.perf_counter() - start,
            self.preload.workers if self.preload.modules else 1,
        )

    # --- stepping -------------------------------------------------------------------------------------
    def _physics_step(self, decimation: int, first_substep: bool = True) -> None:
        """The work of one control step (or of its later physics steps: ``first_substep=False``), as warp launches
        (captured once into a graph on a GPU)."""
        if first_substep:
            self._non_finite.zero_()
            self._data.overflow.zero_()  # sticky in MuJoCo Warp: this control step's overflows only
        num_sensors = self._peak.shape[1]
        for substep in range(decimation):
            mjw.step(self._model, self._data)
            if num_sensors:
                wp.launch(
                    track_contact_peaks,
                    dim=(self.num_envs, num_sensors),
                    inputs=[self._data.sensordata, self._contact_adr, int(substep == 0 and first_substep)],
                    outputs=[self._peak, self._non_finite],
                )
        wp.launch(
            flag_non_finite_state,
            dim=self.num_envs,
            inputs=[self._data.qpos, self._data.qvel, self._data.sensordata],
            outputs=[self._non_finite],
        )

    def step(self, controls: torch.Tensor, decimation: int, first_substep: bool = True) -> None:
        self._ctrl[:, self._actuator_ids] = controls.to(self.device, torch.float32)
        if self._external is not None:  # recorded into torch's graph of the whole step, in order with its kernels
            with wp.ScopedStream(self._external, sync_enter=False):
                self._physics_step(decimation, first_substep)
            return
        if self._stream is None:  # warp's CPU device: launches run in order on the calling thread
            with wp.ScopedDevice(self.wp_device):
                self._physics_step(decimation, first_substep)
            return
        graph = self._graphs.get((decimation, first_substep))
        if graph is None:
            graph = self._graphs[(decimation, first_substep)] = self._capture(decimation, first_substep)
        # The graph runs on warp's stream, ordered after torch's writes (targets, resets) and before torch's reads,
        # through events: nothing waits on the host.
        torch_stream = self._torch_stream()
        assert self._stream is not None and self._events is not None
        self._stream.wait_event(torch_stream.record_event(self._events[0]))
        wp.capture_launch(graph, stream=self._stream)
        torch_stream.wait_event(self._stream.record_event(self._events[1]))

    @contextlib.contextmanager
    def captured(self):
        # Warp is told that torch's stream is capturing (external=True): its launches, conditional nodes and
        # allocations then go into torch's graph.
        stream = self._torch_stream()
        wp.capture_begin(stream=stream, external=True)
        self._external = stream
        try:
            yield
        finally:
            self._external = None
            self._external_graph = wp.capture_end(stream=stream)

    def _torch_stream(self) -> wp.Stream:
        """Torch's current stream on this device, as a warp stream (wrapped once per stream)."""
        current = torch.cuda.current_stream(self.device)
        wrapped = self._torch_streams.get(current.cuda_stream)
        if wrapped is None:
            wrapped = self._torch_streams[current.cuda_stream] = wp.stream_from_torch(current)
        return wrapped

    def _capture(self, decimation: int, first_substep: bool) -> wp.context.Graph:
        torch.cuda.current_stream(self.device).synchronize()  # once per graph: pending torch writes land first
        # Every launch of the step goes to the capturing stream (warp launches on the device's current stream).
        with wp.ScopedStream(self._stream), wp.ScopedCapture(device=self.wp_device, stream=self._stream) as capture:
            self._physics_step(decimation, first_substep)
        assert capture.graph is not None
        return capture.graph

    # --- reads (torch views of warp arrays; no copy of the state) -------------------------------------
    @property
    def qpos(self) -> torch.Tensor:
        return self._qpos

    @property
    def qvel(self) -> torch.Tensor:
        return self._qvel

    def contact_forces(self, group: str) -> torch.Tensor:
        return self._peak_view[:, self._group_columns[group]]

    def contact_force_vectors(self, group: str) -> torch.Tensor:
        adr = getattr(self.robot, f"{group}_sensor_adr")
        index = self._vector_adr.get(group)
        if index is None:
            index = self._vector_adr[group] = torch.as_tensor(adr[:, None] + np.arange(3), device=self.device)
        return self._sensordata[:, index]

    @property
    def overflow_flags(self) -> torch.Tensor:
        return self._overflow & self._overflow_bits

    def overflow_advice(self, bits: int) -> str:
        sizes = f"now nconmax={self.nconmax}, njmax={self.njmax} per env (null: MuJoCo Warp's own estimate)"
        return f"{super().overflow_advice(bits)}; {sizes}"

    @property
    def joint_torques(self) -> torch.Tensor:
        return self._sensordata[:, self._torque_adr]

    @property
    def foot_positions(self) -> torch.Tensor:
        return self._sensordata[:, self._foot_pos_adr]

    @property
    def foot_velocities(self) -> torch.Tensor:
        return self._sensordata[:, self._foot_vel_adr]

    @property
    def non_finite(self) -> torch.Tensor:
        return self._non_finite_view

    def cast_rays(self, origins: torch.Tensor, directions: torch.Tensor, max_distance: float) -> torch.Tensor:
        check_max_distance(max_distance)
        num_envs, num_rays = directions.shape[:2]
        total = num_envs * num_rays
        # All envs' rays are one world's rays into one static copy of the scene (the same for every env).
        pnt = origins.to(self.device, torch.float32)[:, None, :].expand(-1, num_rays, -1).reshape(1, total, 3)
        vec = directions.to(self.device, torch.float32).reshape(1, total, 3).contiguous()
        with wp.ScopedDevice(self.wp_device):
            if self._ray_scene is None:
                self._ray_scene = mjw.put_data(self.robot.model, static_scene_data(self.robot.model), nworld=1)
            buffers = self._ray_buffers.get(total)
            if buffers is None:
                buffers = self._ray_buffers[total] = _ray_buffers(total)
            exclude, dist, geom, normal = buffers
            # On torch's stream: after the writes of the base pose the origins come from, before the reads.
            # Inside a captured step there is nothing before to wait for (and a wait on an event from outside the
            # capture would void it).
            on_torch = (
                wp.ScopedStream(self._torch_stream(), sync_enter=self._external is None)
                if self.wp_device.is_cuda
                else contextlib.nullcontext()
            )
            with on_torch:
                _rays(
                    self._model,
                    self._ray_scene,
                    wp.from_torch(pnt.contiguous(), dtype=wp.vec3),
                    wp.from_torch(vec, dtype=wp.vec3),
                    (-1,) * 6,  # every geom group
                    True,  # static geoms: the terrain and the scene
                    exclude,
                    dist,
                    geom,
                    normal,
                )
        out = wp.to_torch(dist).view(num_envs, num_rays)
        return torch.where((out >= 0) & (out <= max_distance), out, torch.inf)

    # --- writes (torch ops on the views, queued on torch's stream) ------------------------------------
    def reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        mask = mask.to(self.device)
        rows = mask[:, None]
        # torch.where, not a multiply by the mask: a diverged env's values are NaN, and NaN * 0 stays NaN.
        self._qpos.copy_(torch.where(rows, qpos.to(self.device, torch.float32), self._qpos))
        self._qvel.copy_(torch.where(rows, qvel.to(self.device, torch.float32), self._qvel))
        # Time, controls, activations, applied forces, warm start and readings start from zero.
        for view in (*self._resettable, self._ctrl, self._sensordata, self._peak_view):
            view.masked_fill_(mask.view(-1, *([1] * (view.dim() - 1))), 0)
        self._non_finite_view.masked_fill_(mask, False)

    def set_base_velocity(self, mask: torch.Tensor, lin_vel_xy: torch.Tensor) -> None:
        mask = mask.to(self.device)
        base = self._qvel[:, :2]
        base.copy_(torch.where(mask[:, None], lin_vel_xy.to(self.device, torch.float32), base))

    def set_model_field(self, name: str, rows: np.ndarray, values: torch.Tensor) -> None:
        check_field(name)
        view = self._fields[name]  # (num_envs, rows of the field[, width]): one copy per world
        per_env = self.per_env(values.float())
        view[:, torch.as_tensor(rows, device=self.device)] = per_env.view(self.num_envs, len(rows), *view.shape[2:])

    def render_data(self, env_id: int) -> tuple[mujoco.MjModel, mujoco.MjData]:
        """The MuJoCo model and a forward-computed MjData of one env, for rendering."""
        model = self.robot.model
        if self._render_data is None:
            self._render_data = mujoco.MjData(model)
        self._render_data.qpos[:] = self._qpos[env_id].cpu().numpy()
        self._render_data.qvel[:] = self._qvel[env_id].cpu().numpy()
        mujoco.mj_forward(model, self._render_data)
        return model, self._render_data

    def corrupt(self, env_ids: torch.Tensor) -> None:
        """Make the state of ``env_ids`` non-finite (tests and fault injection)."""
        self._qvel[env_ids.to(self.device)] = float("nan")

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        wp.synchronize_device(self.wp_device)

    def device_memory_bytes(self) -> int | None:
        if not self.wp_device.is_cuda or not wp.is_mempool_enabled(self.wp_device):
            return None
        return int(wp.get_mempool_used_mem_high(self.wp_device))

    def close(self) -> None:
        self._graphs.clear()
