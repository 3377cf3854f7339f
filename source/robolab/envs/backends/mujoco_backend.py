"""MuJoCo C backend: every env stepped by ``mujoco.rollout`` worker threads on the CPU.

The full physics state of all envs lives in one float64 array (num_envs, nstate); one ``rollout`` call
per control step advances all of them for ``decimation`` physics steps on a thread pool, so the hot path
has no per-env Python. Randomised friction and base mass live in a pool of model variants, each shared by
a contiguous block of envs (like Isaac Lab's material buckets): consecutive envs then read the same model
from cache, which steps faster than one model per env (docs/benchmarks/README.md).
"""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np
import torch
from mujoco import rollout

from robolab.assets import RobotModel
from robolab.distributed import usable_cores
from robolab.envs.backends.base import (
    PhysicsBackend,
    check_field,
    contact_groups,
    contact_sensor_adr,
    variant_blocks,
)
from robolab.envs.backends.rays import check_max_distance, static_scene_data
from robolab.resources import check_fits

MAX_THREADS = 1024
"""The most physics threads a process may ask for (each holds an ``MjData``; the largest nodes have a few hundred
cores)."""


class MujocoBackend(PhysicsBackend):
    """MuJoCo C on CPU threads: every env's state stepped through ``mujoco.rollout``."""

    def __init__(
        self,
        robot: RobotModel,
        num_envs: int,
        num_threads: int | None = None,
        device: str = "cpu",
        num_variants: int | None = 64,
    ):
        self.robot = robot
        self.num_envs = num_envs
        self.device = torch.device(device)
        model = robot.model
        self.num_threads = usable_cores() if num_threads is None else num_threads
        if not 0 <= self.num_threads <= MAX_THREADS:
            raise ValueError(
                f"env.backend.num_threads={num_threads}: must be in [0, {MAX_THREADS}] (0 = calling thread only; "
                f"this machine has {usable_cores()} cores)"
            )
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS.value
        nstate = mujoco.mj_stateSize(model, spec)
        # A lower bound of what the envs' arrays take (state in and out, controls, sensors, one model per env).
        per_env = 8 * (3 * nstate + model.nu + model.nsensordata + 2)
        check_fits(num_envs * per_env, "cpu", f"{num_envs} envs of MuJoCo C", "--num_envs (env.num_envs)")
        self.num_variants, variant = variant_blocks(num_envs, num_variants)
        self._variants = [copy.copy(model) for _ in range(self.num_variants)]
        self.variant_of_env = torch.as_tensor(variant, device=self.device)
        self._models = [self._variants[v] for v in variant]  # mujoco.rollout takes one model per env
        self._datas = [mujoco.MjData(model) for _ in range(max(1, self.num_threads))]
        self._pool = rollout.Rollout(nthread=self.num_threads)

        self._nstate = nstate
        self._qpos_slice = slice(1, 1 + model.nq)  # state rows: time, qpos, qvel, act, ...
        self._qvel_slice = slice(1 + model.nq, 1 + model.nq + model.nv)
        data = mujoco.MjData(model)
        initial = np.empty(self._nstate)
        mujoco.mj_getState(model, data, initial, spec)
        self._state = np.tile(initial, (num_envs, 1))
        self._ctrl = np.zeros((num_envs, 1, model.nu))
        self._out_state: np.ndarray | None = None
        self._sensor = np.zeros((num_envs, 1, model.nsensordata))
        self._contact_adr = contact_sensor_adr(robot).astype(np.int64)
        self._group_columns = contact_groups(robot)
        self._peak = np.zeros((num_envs, len(self._contact_adr)))
        self._non_finite = np.zeros(num_envs, dtype=bool)
        self._render_data: mujoco.MjData | None = None
        self._ray_datas: list[mujoco.MjData] = []
        self._ray_pool: ThreadPoolExecutor | None = None

    # --- stepping -------------------------------------------------------------------------------------
    def step(self, controls: torch.Tensor, decimation: int, first_substep: bool = True) -> None:
        if self._out_state is None or self._out_state.shape[1] != decimation:
            self._out_state = np.empty((self.num_envs, decimation, self._nstate))
            self._sensor = np.empty((self.num_envs, decimation, self.robot.model.nsensordata))
            self._ctrl = np.zeros((self.num_envs, decimation, self.robot.model.nu))
        self._ctrl[:, :, self.robot.actuator_ids] = controls.detach().to("cpu", torch.float64).numpy()[:, None]
        self._pool.rollout(
            self._models,
            self._datas,
            self._state,
            self._ctrl,
            nstep=decimation,
            state=self._out_state,
            sensordata=self._sensor,
            skip_checks=True,
            initial_warmstart=None,
            control_spec=mujoco.mjtState.mjSTATE_CTRL.value,
            chunk_size=None,
        )
        self._state[:] = self._out_state[:, -1]
        # A row that diverged mid-step stays non-finite (autoreset is off); flag it for the MDP to reset.
        non_finite = np.asarray(~(np.isfinite(self._state).all(axis=1) & np.isfinite(self._sensor).all(axis=(1, 2))))
        forces = self._sensor[:, :, self._contact_adr[:, None] + np.arange(3)]  # (N, decimation, sensors, 3)
        peak = np.linalg.norm(forces, axis=-1).max(axis=1)
        if first_substep:
            self._non_finite, self._peak = non_finite, peak
        else:
            self._non_finite |= non_finite
            np.maximum(self._peak, peak, out=self._peak)  # NaN stays NaN, as in one call

    # --- reads ----------------------------------------------------------------------------------------
    def _torch(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)).to(self.device)

    @property
    def qpos(self) -> torch.Tensor:
        return self._torch(self._state[:, self._qpos_slice])

    @property
    def qvel(self) -> torch.Tensor:
        return self._torch(self._state[:, self._qvel_slice])

    def contact_forces(self, group: str) -> torch.Tensor:
        return self._torch(self._peak[:, self._group_columns[group]])

    def contact_force_vectors(self, group: str) -> torch.Tensor:
        adr = getattr(self.robot, f"{group}_sensor_adr")
        return self._torch(self._sensor[:, -1, adr[:, None] + np.arange(3)])

    @property
    def joint_torques(self) -> torch.Tensor:
        return self._torch(self._sensor[:, -1, self.robot.torque_sensor_adr])

    @property
    def foot_positions(self) -> torch.Tensor:
        adr = self.robot.foot_pos_sensor_adr
        return self._torch(self._sensor[:, -1, adr[:, None] + np.arange(3)])

    @property
    def foot_velocities(self) -> torch.Tensor:
        adr = self.robot.foot_vel_sensor_adr
        return self._torch(self._sensor[:, -1, adr[:, None] + np.arange(3)])

    @property
    def non_finite(self) -> torch.Tensor:
        return torch.from_numpy(self._non_finite.copy()).to(self.device)

    def cast_rays(self, origins: torch.Tensor, directions: torch.Tensor, max_distance: float) -> torch.Tensor:
        check_max_distance(max_distance)
        if not self._ray_datas:
            # One scene copy per thread: mj_multiRay works on its MjData's stack. It releases the GIL.
            self._ray_datas = [static_scene_data(self.robot.model) for _ in range(max(1, self.num_threads))]
            self._ray_pool = ThreadPoolExecutor(len(self._ray_datas)) if len(self._ray_datas) > 1 else None
        pnt = np.ascontiguousarray(origins.detach().cpu().numpy(), dtype=np.float64)
        vec = np.ascontiguousarray(directions.detach().cpu().numpy(), dtype=np.float64)
        num_envs, num_rays = vec.shape[:2]
        dist = np.empty((num_envs, num_rays))
        geom = np.empty((num_envs, num_rays), dtype=np.int32)
        model = self.robot.model

        def cast(worker: int) -> None:
            data = self._ray_datas[worker]
            for env in range(worker, num_envs, len(self._ray_datas)):
                mujoco.mj_multiRay(
                    model,
                    data,
                    pnt[env],
                    vec[env].reshape(-1),
                    None,
                    1,
                    -1,
                    geom[env],
                    dist[env],
                    None,
                    num_rays,
                    max_distance,
                )

        if self._ray_pool is None:
            cast(0)
        else:
            list(self._ray_pool.map(cast, range(len(self._ray_datas))))
        dist[(dist < 0) | (dist > max_distance)] = np.inf  # -1: nothing hit
        return self._torch(dist)

    # --- writes ---------------------------------------------------------------------------------------
    def reset(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        ids = np.flatnonzero(mask.cpu().numpy())  # the physics is on the CPU: the ids are needed here anyway
        if len(ids) == 0:
            return
        rows = self._state[ids]
        rows[:] = 0.0  # time, actuator activations and everything else start from zero
        rows[:, self._qpos_slice] = qpos.cpu().double().numpy()[ids]
        rows[:, self._qvel_slice] = qvel.cpu().double().numpy()[ids]
        self._state[ids] = rows
        self._sensor[ids] = 0.0
        self._peak[ids] = 0.0
        self._non_finite[ids] = False

    def set_base_velocity(self, mask: torch.Tensor, lin_vel_xy: torch.Tensor) -> None:
        ids = np.flatnonzero(mask.cpu().numpy())
        start = self._qvel_slice.start
        self._state[ids, start : start + 2] = lin_vel_xy.cpu().double().numpy()[ids]

    def set_model_field(self, name: str, rows: np.ndarray, values: torch.Tensor) -> None:
        check_field(name)
        for model, rows_values in zip(self._variants, values.cpu().double().numpy(), strict=True):
            getattr(model, name)[rows] = rows_values
            if name == "body_ipos":  # the compiler's flag that the centre of mass sits at the body's origin; MuJoCo C
                model.body_sameframe[rows] = 0  # skips body_ipos where it is set (MuJoCo Warp reads it anyway)

    def render_data(self, env_id: int) -> tuple[mujoco.MjModel, mujoco.MjData]:
        """Model and a forward-computed MjData of one env, for rendering."""
        model = self._models[env_id]
        if self._render_data is None:
            self._render_data = mujoco.MjData(model)
        mujoco.mj_setState(model, self._render_data, self._state[env_id], mujoco.mjtState.mjSTATE_FULLPHYSICS.value)
        mujoco.mj_forward(model, self._render_data)
        return model, self._render_data

    def corrupt(self, env_ids: torch.Tensor) -> None:
        """Make the state of ``env_ids`` non-finite (tests and fault injection)."""
        self._state[env_ids.cpu().numpy(), self._qvel_slice] = np.nan

    def close(self) -> None:
        self._pool.close()
        if self._ray_pool is not None:
            self._ray_pool.shutdown()
