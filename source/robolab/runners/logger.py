"""rsl_rl's logger, with episode statistics taken over every rank instead of rank 0's envs alone.

Every rank keeps its own episode buffers; once per iteration the ranks reduce them (one small
all-gather of the key names, one all-reduce of sums and counts), and rank 0 writes the global values
through rsl_rl's own printing and TensorBoard code.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import torch
from rsl_rl.utils.logger import Logger as RslRlLogger

from robolab import distributed

REWARD_KEY = "Train/mean_reward"
LENGTH_KEY = "Train/mean_episode_length"


class Logger(RslRlLogger):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.iteration_hooks: list[Callable[[int], None]] = []
        self.latest: dict[str, float] = {}
        """Latest global value of every logged statistic (survives iterations where no episode ended)."""
        self.timings: list[tuple[float, float]] = []
        """(collect_s, learn_s) of every iteration on this rank, for benchmarks."""

    def process_env_step(self, rewards, dones, extras, intrinsic_rewards=None) -> None:
        # Same bookkeeping as rsl_rl's, but on every rank (rsl_rl only keeps it where a writer exists).
        if "episode" in extras:
            self.ep_extras.append(extras["episode"])
        elif "log" in extras:
            self.ep_extras.append(extras["log"])
        if intrinsic_rewards is not None:
            self.cur_ereward_sum += rewards
            self.cur_ireward_sum += intrinsic_rewards
            self.cur_reward_sum += rewards + intrinsic_rewards
        else:
            self.cur_reward_sum += rewards
        self.cur_episode_length += 1
        new_ids = (dones > 0).nonzero(as_tuple=False)
        self.rewbuffer.extend(self.cur_reward_sum[new_ids][:, 0].cpu().numpy().tolist())
        self.lenbuffer.extend(self.cur_episode_length[new_ids][:, 0].cpu().numpy().tolist())
        self.cur_reward_sum[new_ids] = 0
        self.cur_episode_length[new_ids] = 0
        if intrinsic_rewards is not None:
            self.erewbuffer.extend(self.cur_ereward_sum[new_ids][:, 0].cpu().numpy().tolist())
            self.irewbuffer.extend(self.cur_ireward_sum[new_ids][:, 0].cpu().numpy().tolist())
            self.cur_ereward_sum[new_ids] = 0
            self.cur_ireward_sum[new_ids] = 0

    def _local_sums(self) -> dict[str, tuple[float, float]]:
        """(sum, count) per statistic on this rank, matching rsl_rl's mean over all logged entries."""
        sums: dict[str, tuple[float, float]] = {}
        if self.rewbuffer:
            sums[REWARD_KEY] = (float(sum(self.rewbuffer)), float(len(self.rewbuffer)))
            sums[LENGTH_KEY] = (float(sum(self.lenbuffer)), float(len(self.lenbuffer)))
        # Values stay on the device until one transfer at the end: reading each (24 steps x ~20 keys) would
        # wait for the GPU hundreds of times per iteration.
        values: dict[str, list[torch.Tensor]] = {}
        for ep_info in self.ep_extras:
            for key, value in ep_info.items():
                values.setdefault(key, []).append(torch.as_tensor(value, dtype=torch.float64, device=self.device).flatten())
        if values:
            totals = torch.stack([torch.cat(parts).sum() for parts in values.values()]).tolist()
            for (key, parts), total in zip(values.items(), totals):
                sums[key] = (total, float(sum(p.numel() for p in parts)))
        return sums

    def reduce_statistics(self) -> dict[str, float]:
        """Global mean of every statistic over all ranks (a collective: every rank must call it)."""
        local = self._local_sums()
        keys = sorted(set().union(*distributed.all_gather_object(sorted(local))))
        packed = torch.tensor([local.get(k, (0.0, 0.0)) for k in keys], dtype=torch.float64).reshape(-1, 2)
        distributed.all_reduce_sum(packed)
        return {k: float(s / c) for k, (s, c) in zip(keys, packed.tolist()) if c > 0}

    def log(self, it: int, start_it: int, total_it: int, collect_time: float, learn_time: float, **kwargs) -> None:
        self.timings.append((collect_time, learn_time))
        stats = self.reduce_statistics()
        self.latest.update(stats)
        if self.writer is not None:
            self._log_global(stats, it, start_it, total_it, collect_time, learn_time, **kwargs)
        else:
            # rsl_rl only counts on the writing rank; keep the totals everywhere for summaries.
            self.tot_timesteps += self.cfg["num_steps_per_env"] * self.num_envs * self.gpu_world_size
            self.tot_time += collect_time + learn_time
            self.ep_extras.clear()
        for hook in self.iteration_hooks:
            hook(it)

    def _log_global(self, stats, it, start_it, total_it, collect_time, learn_time, **kwargs) -> None:
        # rsl_rl's log() reads this rank's buffers; hand it the global values for the call, then restore.
        own = self.rewbuffer, self.lenbuffer, self.ep_extras
        has_episodes = REWARD_KEY in stats
        self.rewbuffer = deque([stats[REWARD_KEY]] if has_episodes else [])
        self.lenbuffer = deque([stats[LENGTH_KEY]] if has_episodes else [])
        extras = {k: torch.tensor([v]) for k, v in stats.items() if k not in (REWARD_KEY, LENGTH_KEY)}
        self.ep_extras = [extras] if extras else []
        try:
            super().log(it=it, start_it=start_it, total_it=total_it, collect_time=collect_time,
                        learn_time=learn_time, **kwargs)
        finally:
            self.rewbuffer, self.lenbuffer, self.ep_extras = own
            self.ep_extras.clear()
