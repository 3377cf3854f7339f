"""Training logs whose statistics count every rank, on top of rsl_rl's writer set-up.

rsl_rl's ``Logger`` keeps episode statistics only on the rank that writes, so a multi-rank run logs rank 0's
envs alone. robolab's logger keeps them on every rank (``EpisodeStatistics``); once per iteration the runner
asks for the global values (a collective: one small all-gather of key names, one all-reduce of sums and
counts) and rank 0 writes them. From rsl_rl it keeps the public writer life cycle: ``init_logging_writer``
(TensorBoard, W&B or Neptune from ``cfg["logger"]``, plus the git state of the code), ``save_model`` and
``stop_logging_writer``; ``process_env_step`` is overridden whole and the iteration is written by ``log_iteration``.
"""

from __future__ import annotations

import datetime
import pathlib
from collections import deque
from dataclasses import dataclass, field

import torch

from robolab import console, distributed
from robolab.distributed import DistributedContext
from robolab.rsl_rl_api import Logger as RslRlLogger
from robolab.rsl_rl_api import LogWriter

REWARD_KEY = "Train/mean_reward"
LENGTH_KEY = "Train/mean_episode_length"
EXTRINSIC_KEY = "Rnd/mean_extrinsic_reward"
INTRINSIC_KEY = "Rnd/mean_intrinsic_reward"
RECENT_EPISODES = 100  # rewards and lengths are averaged over each rank's last 100 episodes, as rsl_rl does

# The quiet iteration line: (statistic, label, format), each shown when it was logged.
QUIET_STATISTICS = (
    (REWARD_KEY, "reward", "{:.2f}"),
    (LENGTH_KEY, "episode", "{:.0f} steps"),
    ("Metrics/lin_vel_tracking_error", "tracking", "{:.3f} m/s"),
    ("Metrics/fall_rate", "falls", "{:.1%}"),
    ("Curriculum/terrain_level", "terrain level", "{:.2f}"),
)


def _si(value: float) -> str:
    """1234567 -> "1.23M", 45678 -> "45.7k", 512 -> "512"."""
    for factor, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.0f}"


def unit_of(key: str) -> str:
    """What a logged number counts, where its name does not say: a termination's value is a count of episodes (per
    step at which episodes ended, averaged over those steps, as Isaac Lab logs it), not a share."""
    if key.startswith("Episode_Termination/"):
        return " episodes per step with an end"
    if key.startswith("Metrics/") and key.endswith("_total"):
        return " envs since the start"
    return ""


class EpisodeStatistics:
    """One rank's running episode sums, its recent finished episodes and the env's per-step ``log`` extras."""

    def __init__(self, num_envs: int, device: str | torch.device):
        self.reward_sum = torch.zeros(num_envs, device=device)
        self.extrinsic_sum = torch.zeros(num_envs, device=device)
        self.intrinsic_sum = torch.zeros(num_envs, device=device)
        self.length = torch.zeros(num_envs, device=device)
        self.recent: dict[str, deque] = {
            k: deque(maxlen=RECENT_EPISODES) for k in (REWARD_KEY, LENGTH_KEY, EXTRINSIC_KEY, INTRINSIC_KEY)
        }
        self.extras: list[dict] = []
        self.finished: list[tuple[torch.Tensor, dict[str, torch.Tensor]]] = []  # per step: (done, sums), on device
        self.device = device

    def add_step(self, rewards, dones, extras: dict, intrinsic_rewards=None) -> None:
        if "episode" in extras:
            self.extras.append(extras["episode"])
        elif "log" in extras:
            self.extras.append(extras["log"])
        total = rewards if intrinsic_rewards is None else rewards + intrinsic_rewards
        self.reward_sum += total
        self.length += 1
        if intrinsic_rewards is not None:
            self.extrinsic_sum += rewards
            self.intrinsic_sum += intrinsic_rewards
        # The ended episodes' sums stay on the device until the iteration's statistics are read: picking them out
        # here would wait for the GPU every step.
        done = dones > 0
        sums = {REWARD_KEY: self.reward_sum, LENGTH_KEY: self.length}
        if intrinsic_rewards is not None:
            sums.update({EXTRINSIC_KEY: self.extrinsic_sum, INTRINSIC_KEY: self.intrinsic_sum})
        self.finished.append((done, {key: values.clone() for key, values in sums.items()}))
        for values in sums.values():
            values.masked_fill_(done, 0.0)

    def _flush_finished(self) -> None:
        """Move the episodes that ended since the last call into ``recent``, in the order they ended."""
        if not self.finished:
            return
        done = torch.stack([d for d, _ in self.finished])  # (steps, envs): step-major, as they ended
        for key in self.finished[0][1]:
            values = torch.stack([sums[key] for _, sums in self.finished])
            self.recent[key].extend(values[done].tolist())
        self.finished.clear()

    def local_sums(self) -> dict[str, tuple[float, float]]:
        """(sum, count) per statistic on this rank: recent episodes, and the mean of every logged extra."""
        self._flush_finished()
        sums = {key: (float(sum(values)), float(len(values))) for key, values in self.recent.items() if values}
        # Extras stay on the device until one transfer at the end: reading each (24 steps x ~20 keys) would
        # wait for the GPU hundreds of times per iteration.
        values: dict[str, list[torch.Tensor]] = {}
        for step in self.extras:
            for key, value in step.items():
                values.setdefault(key, []).append(
                    torch.as_tensor(value, dtype=torch.float64, device=self.device).flatten()
                )
        if values:
            # A NaN entry is a step where the value did not exist (the embedded env logs episode means as NaN when
            # no episode ended, rather than wait for the GPU to ask): left out of both the sum and the count.
            stacked = [torch.cat(parts) for parts in values.values()]
            totals = torch.stack([torch.stack([v.nansum(), (~v.isnan()).sum()]) for v in stacked]).tolist()
            for key, (total, count) in zip(values, totals):
                if count > 0:
                    sums[key] = (total, count)
        self.extras.clear()
        return sums


def reduce_statistics(local: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Global mean of every statistic over all ranks (a collective: every rank must call it)."""
    keys = sorted(set().union(*distributed.all_gather_object(sorted(local))))
    packed = torch.tensor([local.get(k, (0.0, 0.0)) for k in keys], dtype=torch.float64).reshape(-1, 2)
    distributed.all_reduce_sum(packed)
    return {k: float(s / c) for k, (s, c) in zip(keys, packed.tolist()) if c > 0}


@dataclass
class IterationRecord:
    """What one training iteration reports, after the statistics were reduced over ranks."""

    it: int
    start_it: int
    total_it: int
    collect_s: float
    learn_s: float
    losses: dict[str, float]
    learning_rate: float
    action_std: float
    stats: dict[str, float] = field(default_factory=dict)


class TrainingLogger(RslRlLogger):
    """One logger per run: rsl_rl's writer on rank 0, global episode statistics on every rank."""

    def __init__(self, log_dir: str | None, cfg: dict, env_cfg, num_envs: int, ctx: DistributedContext, device: str):
        super().__init__(
            log_dir=log_dir,
            cfg=cfg,
            env_cfg=env_cfg,
            num_envs=num_envs,
            is_distributed=ctx.is_distributed,
            gpu_world_size=ctx.world_size,
            gpu_global_rank=ctx.rank,
            device=device,
        )
        self.steps_per_iteration = cfg["num_steps_per_env"] * num_envs * ctx.world_size
        self.episodes = EpisodeStatistics(num_envs, device)
        self.latest: dict[str, float] = {}
        """Latest global value of every logged statistic (survives iterations where no episode ended)."""
        self.latest_losses: dict[str, float] = {}
        """The losses of the last iteration (``summary.json``: they must stay finite)."""
        self.timings: list[tuple[float, float]] = []
        """(collect_s, learn_s) of every iteration on this rank, for benchmarks."""
        self.total_steps = 0
        self.total_s = 0.0

    def set_log_dir(self, log_dir: str | None) -> None:
        """Where the writer goes once training starts (the run directory exists only after a validated start)."""
        self.log_dir = log_dir

    def process_env_step(self, rewards, dones, extras, intrinsic_rewards=None) -> None:
        self.episodes.add_step(rewards, dones, extras, intrinsic_rewards)

    def global_statistics(self) -> dict[str, float]:
        """This iteration's statistics over every rank (a collective); remembered in ``latest``."""
        stats = reduce_statistics(self.episodes.local_sums())
        self.latest.update(stats)
        return stats

    def log_iteration(self, record: IterationRecord) -> None:
        """Count the iteration on every rank; write scalars and print the summary where a writer exists."""
        self.timings.append((record.collect_s, record.learn_s))
        self.latest_losses = dict(record.losses)
        self.total_steps += self.steps_per_iteration
        self.total_s += record.collect_s + record.learn_s
        if self.writer is not None:
            self._write_scalars(record)
            print(self._console_block(record) if console.verbose() else self._console_line(record), flush=True)
            self._upload_videos(record.it)

    def _upload_videos(self, it: int) -> None:
        """Completed clips (``robolab.video`` writes under a hidden name until a clip is closed) go to a writer
        that stores videos (W&B), as rsl_rl's own ``log`` does; each file once."""
        if isinstance(self.writer, LogWriter) and self.log_dir is not None:
            for video in sorted(pathlib.Path(self.log_dir).rglob("*.mp4")):
                if not video.name.startswith("."):
                    self.writer.save_video(video, it)

    def _write_scalars(self, r: IterationRecord) -> None:
        add = self.writer.add_scalar
        for key, value in r.stats.items():
            add(key if "/" in key else f"Episode/{key}", value, r.it)
        if REWARD_KEY in r.stats:  # also against wall time, as rsl_rl does with TensorBoard
            add(f"{REWARD_KEY}/time", r.stats[REWARD_KEY], int(self.total_s))
            add(f"{LENGTH_KEY}/time", r.stats[LENGTH_KEY], int(self.total_s))
        for key, value in r.losses.items():
            add(f"Loss/{key}", value, r.it)
        add("Loss/learning_rate", r.learning_rate, r.it)
        add("Policy/mean_std", r.action_std, r.it)
        add("Perf/total_fps", int(self.steps_per_iteration / max(r.collect_s + r.learn_s, 1e-9)), r.it)
        add("Perf/collection_time", r.collect_s, r.it)
        add("Perf/learning_time", r.learn_s, r.it)

    def _eta_s(self, r: IterationRecord) -> float:
        done = r.it + 1 - r.start_it
        return self.total_s / done * (r.total_it - r.start_it - done)

    def _console_line(self, r: IterationRecord) -> str:
        """The quiet default: one line per iteration with what says whether training works."""
        rate = self.steps_per_iteration / max(r.collect_s + r.learn_s, 1e-9)
        parts = [f"{_si(rate)} steps/s"]
        for key, label, fmt in QUIET_STATISTICS:
            if key in r.stats:
                parts.append(f"{label} {fmt.format(r.stats[key])}")
        elapsed = datetime.timedelta(seconds=int(self.total_s))
        parts.append(f"{elapsed} elapsed, ETA {datetime.timedelta(seconds=int(self._eta_s(r)))}")
        return console.iteration_line(r.it + 1, r.total_it, parts)

    def _console_block(self, r: IterationRecord, width: int = 80, pad: int = 40) -> str:
        iteration_s = r.collect_s + r.learn_s
        eta = self._eta_s(r)
        lines = [
            "#" * width,
            f"\033[1m{f' Learning iteration {r.it}/{r.total_it} '.center(width)}\033[0m",
            "",
        ]
        rows = [
            ("Run name:", self.cfg.get("run_name") or None),
            ("Total steps:", self.total_steps),
            ("Steps per second:", f"{self.steps_per_iteration / max(iteration_s, 1e-9):.0f}"),
            ("Collection time:", f"{r.collect_s:.3f}s"),
            ("Learning time:", f"{r.learn_s:.3f}s"),
        ]
        rows += [(f"Mean {k} loss:", f"{v:.4f}") for k, v in r.losses.items()]
        if REWARD_KEY in r.stats:
            rows += [
                ("Mean reward:", f"{r.stats[REWARD_KEY]:.2f}"),
                ("Mean episode length:", f"{r.stats[LENGTH_KEY]:.2f}"),
            ]
        rows.append(("Mean action std:", f"{r.action_std:.2f}"))
        rows += [(f"{k}:", f"{v:.4f}{unit_of(k)}") for k, v in r.stats.items() if k not in (REWARD_KEY, LENGTH_KEY)]
        lines += [f"{name:>{pad}} {value}" for name, value in rows if value is not None]
        lines += [
            "-" * width,
            f"{'Iteration time:':>{pad}} {iteration_s:.2f}s",
            f"{'Time elapsed:':>{pad}} {datetime.timedelta(seconds=int(self.total_s))}",
            f"{'ETA:':>{pad}} {datetime.timedelta(seconds=int(eta))}",
        ]
        return "\n".join(lines) + "\n"
