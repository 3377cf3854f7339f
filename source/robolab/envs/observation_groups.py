"""The observation groups of a declared MDP, computed batched: one tensor op per group and modifier, not per term.

A term that several groups read (the ``critic`` repeats the ``policy``'s terms without noise) is computed once per
step; a group identical to another (the ``teacher`` of the Go2 tasks is the ``critic``) is the same tensor. Each
group's noise is one draw for its whole frame, scaled per column (zero where a term is exact), then the clip and
scale of each column (skipped where no term sets them), then the term and group histories.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robolab import resources
from robolab.envs.delay import DelayLine
from robolab.envs.terms import (
    BoundTerm,
    ObsGroupCfg,
    ObsTermCfg,
    TermError,
    bind_table,
    check_int_range,
    check_output,
    guarded,
)

MAX_GROUP_WIDTH = 2**20
"""The most numbers one observation group may hold, histories included: a network's first layer over more than a
million inputs is no policy, and the history buffers of such a group are refused before they are allocated (a
zero-filled buffer of gigabytes is not an exception but the kernel's out-of-memory kill)."""


class History:
    """The last ``length`` frames of a (num_envs, width) value, oldest first, flattened; a new episode starts
    with its first frame repeated (no stale frames from the previous episode)."""

    def __init__(self, length: int):
        self.length = length
        self.frames: torch.Tensor | None = None

    def __call__(self, frame: torch.Tensor, reset: torch.Tensor | None) -> torch.Tensor:
        if self.length == 1:
            return frame
        flat = frame[:, None].expand(-1, self.length, -1)
        if self.frames is None:
            self.frames = flat.clone()
        else:
            self.frames = torch.cat([self.frames[:, 1:], frame[:, None]], dim=1)
            if reset is not None:
                self.frames = torch.where(reset[:, None, None], flat, self.frames)
        return self.frames.flatten(1)

    def clear(self) -> None:
        self.frames = None


@dataclass
class _Group:
    name: str
    cfg: ObsGroupCfg
    terms: list[BoundTerm]
    term_signatures: list[tuple]
    signature: tuple
    noise: torch.Tensor | None
    low: torch.Tensor | None
    high: torch.Tensor | None
    scale: torch.Tensor | None
    term_histories: list[History] | None
    history: History
    delay: DelayLine | None


def _signature(term: BoundTerm) -> tuple:
    """What makes two terms the same value: the function and its parameters."""
    call = term.call
    func = getattr(call, "func", call)
    return (func, repr(sorted(getattr(call, "keywords", {}).items())))


class ObservationGroups:
    """Builds, checks and computes every group of ``env.cfg.observations``."""

    def __init__(self, env, groups: dict[str, ObsGroupCfg]):
        if not groups:
            raise TermError("env.observations: declare at least one group (rsl_rl reads 'policy')")
        self.env = env
        self.groups: list[_Group] = []
        self.widths: dict[str, list[int]] = {}
        for name, cfg in groups.items():
            key = f"env.observations.{name}"
            if not isinstance(cfg, ObsGroupCfg):
                raise TermError(f"{key}: expected an observation group ({{terms: {{...}}}}), got {cfg!r}")
            if not cfg.terms:
                raise TermError(f"{key}.terms: a group needs at least one term")
            if cfg.history_length < 1:
                raise TermError(f"{key}.history_length={cfg.history_length}: must be >= 1")
            try:
                check_int_range(f"{key}.delay_range", cfg.delay_range)
            except ValueError as err:
                raise TermError(str(err)) from None
            self.groups.append(
                self._build(name, cfg, bind_table(f"observations.{name}.terms", cfg.terms, 1, ObsTermCfg))
            )

    def _build(self, name: str, cfg: ObsGroupCfg, terms: list[BoundTerm]) -> _Group:
        env, columns = self.env, []
        for term in terms:
            t = term.cfg
            if t.history_length < 1:
                raise TermError(f"{term.key}.history_length={t.history_length}: must be >= 1")
            if t.noise < 0:
                raise TermError(f"{term.key}.noise={t.noise}: a half-width, must be >= 0")
            if t.clip is not None and not (len(t.clip) == 2 and t.clip[0] <= t.clip[1]):
                raise TermError(f"{term.key}.clip={list(t.clip)}: expected [low, high] with low <= high")
            value = guarded(term.key, term.call, env)
            check_output(value, term.key, env.num_envs, "observation")
            columns.append((value.shape[1], t))
        self.widths[name] = [w * t.history_length for w, t in columns]
        self._check_size(name, cfg, terms, self.widths[name])

        def per_column(get, neutral) -> torch.Tensor | None:
            values = [torch.full((w,), float(get(t)), device=env.device) for w, t in columns]
            merged = torch.cat(values)
            return None if bool((merged == neutral).all()) else merged

        noise = per_column(lambda t: t.noise, 0.0) if cfg.enable_corruption else None
        low = per_column(lambda t: t.clip[0] if t.clip else -torch.inf, -torch.inf)
        high = per_column(lambda t: t.clip[1] if t.clip else torch.inf, torch.inf)
        scale = per_column(lambda t: t.scale, 1.0)
        histories = [History(t.history_length) for _, t in columns]
        modifiers = tuple(
            (t.noise if cfg.enable_corruption else 0.0, t.clip and tuple(t.clip), t.scale, t.history_length)
            for _, t in columns
        )
        term_signatures = [_signature(t) for t in terms]
        signature = (tuple(term_signatures), modifiers, cfg.history_length, tuple(cfg.delay_range))
        delay = None
        if tuple(cfg.delay_range) != (0, 0):
            delay = DelayLine(env.num_envs, cfg.delay_range[1], env.device)
            self._draw_delays(name, cfg, delay, torch.ones(env.num_envs, dtype=torch.bool, device=env.device))
        return _Group(
            name,
            cfg,
            terms,
            term_signatures,
            signature,
            noise,
            low,
            high,
            scale,
            histories if any(h.length > 1 for h in histories) else None,
            History(cfg.history_length),
            delay,
        )

    def _draw_delays(self, name: str, cfg: ObsGroupCfg, delay: DelayLine, mask: torch.Tensor) -> None:
        """New delays for the envs of ``mask`` (their episodes start), recorded as ``<group>_delay``."""
        env, (low, high) = self.env, cfg.delay_range
        steps = torch.randint(low, high + 1, (env.num_envs,), generator=env.generator, device=env.device)
        delay.restart(mask, steps)
        env.physics_params[f"{name}_delay"] = delay.delays.float()

    def _check_size(self, name: str, cfg: ObsGroupCfg, terms: list[BoundTerm], widths: list[int]) -> None:
        """The group's width and its history buffers' memory, checked before any buffer exists; the message names
        the history setting that made it large."""
        width = sum(widths) * cfg.history_length
        longest = max(zip(widths, terms), key=lambda pair: pair[0])[1]
        if cfg.history_length > 1 and cfg.history_length >= longest.cfg.history_length:
            setting = f"env.observations.{name}.history_length={cfg.history_length}"
        else:
            setting = f"{longest.key}.history_length={longest.cfg.history_length}"
        if width > MAX_GROUP_WIDTH:
            raise TermError(
                f"{setting}: makes the {name!r} observation {width} numbers wide (at most {MAX_GROUP_WIDTH})"
            )
        needed = 4 * self.env.num_envs * (sum(widths) + width)  # term histories, then the group's own (float32)
        try:
            resources.check_fits(needed, self.env.device, f"the {name!r} observation's history", setting)
        except resources.MemoryFitError as err:
            raise TermError(str(err)) from None

    @property
    def names(self) -> list[str]:
        return [g.name for g in self.groups]

    def terms(self, group: str) -> list[BoundTerm]:
        """The group's terms in order (name, key, config)."""
        return list(self._group(group).terms)

    def group_cfg(self, group: str) -> ObsGroupCfg:
        return self._group(group).cfg

    def _group(self, name: str) -> _Group:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(name)

    def clear_history(self) -> None:
        everyone = torch.ones(self.env.num_envs, dtype=torch.bool, device=self.env.device)
        for group in self.groups:
            group.history.clear()
            if group.delay is not None:
                self._draw_delays(group.name, group.cfg, group.delay, everyone)
            for history in group.term_histories or ():
                history.clear()

    def compute(self, reset: torch.Tensor | None = None, only: str | None = None) -> dict[str, torch.Tensor]:
        """Every group's value (or only the group ``only``), each term computed once. ``reset`` marks the envs that
        start a new episode (their histories restart)."""
        env, generator = self.env, self.env.generator
        values: dict[tuple, torch.Tensor] = {}
        done: dict[tuple, torch.Tensor] = {}
        out = {}
        for group in self.groups:
            if only is not None and group.name != only:
                continue
            if group.delay is not None and reset is not None:
                self._draw_delays(group.name, group.cfg, group.delay, reset)
            if group.noise is None and group.delay is None and group.signature in done:  # the same declaration, no
                # draw: the same tensor
                out[group.name] = done[group.signature]
                continue
            parts = []
            for term, sig in zip(group.terms, group.term_signatures):
                if sig not in values:
                    values[sig] = term.call(env)
                parts.append(values[sig])
            frame = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
            if group.noise is not None:  # one draw for the whole frame: uniform in [-noise, noise] per column
                frame = frame + group.noise * (
                    2.0 * torch.rand(frame.shape, generator=generator, device=env.device) - 1.0
                )
            if group.low is not None or group.high is not None:
                frame = frame.clamp(min=group.low, max=group.high)
            if group.scale is not None:
                frame = frame * group.scale
            if group.delay is not None:  # what the policy sees late is the reading as it was, noise and all
                frame = group.delay(frame)
            if group.term_histories is not None:
                chunks = frame.split([p.shape[1] for p in parts], dim=1)
                frame = torch.cat([h(c, reset) for h, c in zip(group.term_histories, chunks)], dim=1)
            out[group.name] = group.history(frame, reset)
            if group.noise is None and group.delay is None:
                done[group.signature] = out[group.name]
        return out
