"""What a kind of task offers a session: one interface, implemented by the embedded MuJoCo tasks, by Isaac Lab's,
and by any other (a user's own ``VecEnv``).

Every place that once asked "is this an Isaac Lab task?" asks the task's kind instead (``tasks.kind_of``): how its
agent config reaches Hydra, how its env config is built and its env opened, how it records video, what it refuses.
A task's kind is in its gymnasium registration (``robolab_kind``: ``module:Class``); Isaac Lab's own tasks, which
robolab does not register, are of ``IsaacLabTask``.
"""

from __future__ import annotations

import contextlib
import os

from hydra.core.config_store import ConfigStore

STORE_PREFIX = "robolab_inline__"
"""Hydra's ConfigStore name prefix of a task's inline agent config."""


class TaskKind:
    """The defaults are the embedded tasks'; a kind overrides what differs."""

    name = "embedded"
    launcher_flags = False
    """Takes Isaac Lab's launcher flags (``--visualizer``, ``--kit_args`` ...)."""
    own_video_recorder = False
    """Records ``--video`` through the env's own recorder (given to ``open_env``) instead of robolab's wrapper."""
    reads_saved_env = True
    """``play.py`` builds the env from the run's ``params/env.yaml`` (``env_config``'s ``saved``)."""
    eval_overrides: tuple[str, ...] = ("env.observations.policy.enable_corruption=false", "env.events.push_robot=null")
    """Evaluation conditions, Isaac Lab's play settings in the spelling robolab's and Isaac Lab's velocity tasks share:
    no observation noise, no pushes (the push event removed where the task has one)."""
    viewer = True
    """``play.py --viewer`` can show it (MuJoCo's window or the web viewer, from the MuJoCo backend's models)."""
    amp_hint = "the embedded env builds it from env.amp_terms: set the terms, e.g. the task's AMP variant's"
    """How to give the env an ``amp`` observation group (the missing-group error's hint)."""

    # --- config -------------------------------------------------------------------------------------
    def task_config(self, task_id: str, agent: str, presets: list[str], overrides: list[str]) -> tuple[str, list[str]]:
        """The Hydra task config of ``task_id``'s agent entry point ``agent`` and the overrides that go before the
        user's (the task's pipeline and seed, where it has them)."""
        from robolab import tasks
        from robolab.config import PIPELINES, PRESET_TOKENS, ConfigError, command_line_pipeline

        if presets:
            raise ConfigError(
                f"{presets[0]}: {', '.join(PRESET_TOKENS)} select Isaac Lab presets; {task_id} is an embedded "
                "MuJoCo task (its physics: env.backend=auto|mujoco|warp)"
            )
        entry = tasks.agent_config(task_id, agent)
        if isinstance(entry, str):
            return entry, []
        runner = entry.get("runner", "on_policy")
        if runner not in PIPELINES:
            raise ConfigError(f"{task_id} {agent}: runner={runner!r}: allowed: {', '.join(PIPELINES)}")
        name = f"{STORE_PREFIX}{task_id}__{agent}"
        ConfigStore.instance().store(
            group="task", name=name, node={"agent": entry.get("agent", {})}, package="_global_"
        )
        chosen = command_line_pipeline(overrides)
        return name, [] if chosen else [f"runner={runner}", f"algorithm={PIPELINES[runner]}"]

    def task_file(self, hydra_task: str) -> str | None:
        """The file under ``config/task`` the Hydra task config is, if it is one (its defaults pick the pipeline)."""
        return None if hydra_task.startswith(STORE_PREFIX) else hydra_task

    def env_config(self, task_id: str, job, saved: dict | None = None):
        """The env config (a dataclass): the task's, a run's ``saved`` ``params/env.yaml``, then ``env.*``."""
        from robolab.config import build_env_cfg

        env_cfg = build_env_cfg(task_id, job.cfg.env, saved)
        env_cfg.seed, env_cfg.device = job.seed, job.device
        return env_cfg

    def open_env(
        self, task_id: str, env_cfg, job, closer: contextlib.ExitStack, video=None, launcher=None, clip_actions=None
    ):
        """The env (closed by ``closer``) and the config to record as ``params/env.yaml``. ``video`` and ``launcher``
        are for a kind with its own recorder and launcher; ``clip_actions`` is the agent's (``check_agent``)."""
        from robolab import tasks

        env = tasks.env_class(task_id)(env_cfg)
        closer.callback(env.close)
        return env, env_cfg

    def check_video(self) -> None:
        """Fail before any work when ``--video`` cannot work."""
        from robolab.video import check_renderer

        check_renderer()

    def check_agent(self, task_id: str, agent: dict) -> None:
        from robolab.config import ConfigError

        if agent.get("clip_actions") is not None:
            raise ConfigError(
                f"agent.clip_actions={agent['clip_actions']}: {task_id} is an embedded task, whose actions the env "
                "itself bounds"
            )

    # --- a running env ------------------------------------------------------------------------------
    def export_io_descriptors(self, env, params_dir: str) -> None:
        from robolab import files
        from robolab.config import to_yaml

        files.write_text_atomic(os.path.join(params_dir, "io_descriptors.yaml"), to_yaml(_base(env).io_descriptors()))

    def policy_interface(self, env):
        from robolab import sim2sim

        return sim2sim.embedded_interface(_base(env).io_descriptors())

    def benchmark_refusal(self, task_id: str) -> str | None:
        """Why ``benchmark.py`` cannot time it, or None."""
        return None


class VelocityTask(TaskKind):
    """robolab's embedded velocity tasks: ``VelocityEnv`` on MuJoCo C or MuJoCo Warp."""

    def env_config(self, task_id: str, job, saved: dict | None = None):
        from robolab.envs.backends import resolve_name
        from robolab.session import share_cpu_cores

        env_cfg = super().env_config(task_id, job, saved)
        env_cfg.backend.name = resolve_name(env_cfg.backend.name, job.device)  # params/env.yaml names the one that ran
        share_cpu_cores(env_cfg, job.ctx)
        return env_cfg


class IsaacLabTask(TaskKind):
    """An Isaac Lab task: Isaac Lab's env and config, its rsl_rl agent translated (``tasks/isaaclab``)."""

    name = "isaaclab"
    launcher_flags = True
    own_video_recorder = True
    reads_saved_env = False
    viewer = False
    amp_hint = "robolab.tasks.isaaclab.env_cfgs.add_amp_group adds robolab's AMP state to an Isaac Lab env config"

    def task_config(self, task_id, agent, presets, overrides):
        from robolab.config import command_line_pipeline
        from robolab.tasks.isaaclab.agent_cfg import store_task_config

        chosen = command_line_pipeline(overrides)
        return store_task_config(task_id, agent, presets, chosen.get("runner"), chosen.get("algorithm"))

    def task_file(self, hydra_task: str) -> str | None:
        return None

    def env_config(self, task_id, job, saved=None):
        return None  # Isaac Lab builds and checks its own config when the env is opened

    def open_env(self, task_id, env_cfg, job, closer, video=None, launcher=None, clip_actions=None):
        from robolab.tasks.isaaclab.vecenv import IsaacLabLaunch, env_config_dict, make_isaaclab_env

        launch = IsaacLabLaunch(list(job.cfg.get("isaaclab_presets") or []), dict(launcher or {}))
        from robolab.config import plain

        env_overrides = plain(job.cfg.env)
        env = make_isaaclab_env(task_id, env_overrides, job.device, job.seed, closer, video, launch, clip_actions)
        return env, env_config_dict(env)

    def check_video(self) -> None:
        return None  # Isaac Lab's recorder checks its own renderer

    def check_agent(self, task_id: str, agent: dict) -> None:
        return None  # rsl_rl's wrapper clips actions to agent.clip_actions

    def export_io_descriptors(self, env, params_dir: str) -> None:
        env.unwrapped.export_IO_descriptors(params_dir)

    def policy_interface(self, env):
        from robolab import sim2sim

        return sim2sim.isaaclab_interface(env.unwrapped)

    def benchmark_refusal(self, task_id: str) -> str | None:
        return f"--task={task_id}: the benchmark times the embedded tasks' physics backends only"


def _base(env):
    return getattr(env, "unwrapped", env)
