"""Declared MDP terms: their configs, how a name becomes a function, and the checks run before any work.

A task's env config holds one table per kind of term (``observations``, ``rewards``, ``terminations``, ``events``,
``commands``, ``curricula``): a dict from a term's name to its config. A term names its function (``func``) and
the keyword parameters it is called with (``params``); the kind adds what the env does with the value (a reward's
weight; an observation's noise, clip and scale; an event's mode). The env reads the tables once, at construction:

- ``resolve_func`` turns ``func`` into a callable: ``"package.module:function"``, or a bare name from
  ``robolab.envs.mdp`` (``"track_lin_vel_xy_exp"``), or a callable given in Python;
- ``bind`` checks the parameters against the function's signature (a missing or extra one is an error naming the
  term, the parameter and what the function takes);
- ``check_output`` checks the first value each observation, reward and termination term returns (shape, dtype).

Every error is a one-line ``TermError`` that starts with the term's key, e.g. ``env.rewards.foo: ...``.

Term functions, by kind (``env`` is the ``VelocityEnv``; ``mask`` a (num_envs,) bool of the envs concerned):

| kind        | called as                       | returns                                   |
| ----------- | ------------------------------- | ----------------------------------------- |
| observation | ``func(env, **params)``         | (num_envs, width) float                   |
| reward      | ``func(env, **params)``         | (num_envs,) float, before the weight      |
| termination | ``func(env, **params)``         | (num_envs,) bool                          |
| event       | ``func(env, mask, **params)``   | nothing (it writes the backend or state)  |
| command     | ``func(env, **params)``: a class | an object with ``command``, ``reset(mask)``, ``update()`` |
| curriculum  | ``func(env, mask, **params)``   | a 0-dim tensor (``Curriculum/<name>``), a dict of them, or None |

Event and curriculum terms of the reset are called every step with the mask of the envs that start an episode then,
which may hold none (asking whether any env ended would wait for the GPU): they act where the mask holds.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

MDP_MODULE = "robolab.envs.mdp"
"""Where a bare function name is looked up."""
EVENT_MODES = ("startup", "reset", "interval")


class TermError(ValueError):
    """A term that cannot work as declared; the message is one line and starts with the term's key."""


@dataclass
class TermCfg:
    """A declared term: a function, its parameters and the row of a table it stands in."""

    func: Any = None
    """``"module:function"``, a bare name from ``robolab.envs.mdp``, or (in Python) a callable."""
    params: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of ``func`` besides the env (and the mask of an event or curriculum)."""


@dataclass
class ObsTermCfg(TermCfg):
    """An observation term: its noise, clip, scale, history and delay."""

    noise: float = 0.0
    """Half-width of the uniform noise added when the group's ``enable_corruption`` is on (0: exact)."""
    clip: tuple[float, float] | None = None
    """(low, high) the value is clipped to, after the noise."""
    scale: float = 1.0
    """Multiplies the value, after the clip (Isaac Lab's order: noise, clip, scale)."""
    history_length: int = 1
    """Frames of this term kept and concatenated, oldest first (1: the current one)."""
    mirror: str | None = None
    """How the term's columns mirror left to right, for a term ``robolab.envs.symmetry`` does not know (one of its
    ``MIRROR_KINDS``); None: known from the term's function."""


@dataclass
class ObsGroupCfg:
    """One observation group (``policy``, ``critic``, ``teacher``, ...): its terms concatenated in order."""

    terms: dict[str, ObsTermCfg] = field(default_factory=dict)
    """The group's terms by name, concatenated in this order."""
    enable_corruption: bool = True
    """Add each term's noise (evaluation and the privileged groups turn it off)."""
    history_length: int = 1
    """Frames of the whole group stacked, oldest first (1: the current frame only)."""
    delay_range: tuple[int, int] = (0, 0)
    """Control steps the group reaches the policy late, drawn per env and episode from these whole numbers (a
    sensor's and the onboard computer's latency; recorded as the ``physics_param`` ``<group>_delay``)."""


@dataclass
class RewardTermCfg(TermCfg):
    """A reward term: its weight."""

    weight: float = 0.0
    """Multiplies the value (and the control dt, as in Isaac Lab); 0: the term is never computed."""


@dataclass
class TerminationTermCfg(TermCfg):
    """A termination term: whether it is a time limit."""

    time_out: bool = False
    """A time limit, not a failure: the runner bootstraps the value of such an episode end."""


@dataclass
class EventTermCfg(TermCfg):
    """An event term: when it runs (start-up, reset or at intervals)."""

    mode: str = "reset"
    """``startup`` (once, before the first episode), ``reset`` (each new episode) or ``interval``."""
    interval_range_s: tuple[float, float] = (10.0, 15.0)
    """Interval events: seconds between two firings, drawn per env after each firing and at each reset."""


@dataclass
class CommandTermCfg(TermCfg):
    """``func`` names a class: ``func(env, **params)`` keeps a ``command`` tensor (num_envs, width)."""


@dataclass
class CurriculumTermCfg(TermCfg):
    """Called every step with the mask of the envs starting a new episode (possibly none), before the reset events
    place them; what it returns is logged as ``Curriculum/<name>``."""


def term_key(table: str, name: str) -> str:
    """The override path of a term, ``env.<table>.<name>``, as error messages name it."""
    return f"env.{table}.{name}"


def resolve_func(func: Any, key: str, default_module: str = MDP_MODULE) -> Callable:
    """The callable ``func`` names (see ``TermCfg.func``); a bare name is looked up in ``default_module``."""
    if callable(func):
        return func
    if not isinstance(func, str) or not func:
        raise TermError(f"{key}: func={func!r}: give 'module:function' or a function name of {default_module}")
    module_name, sep, attr = func.rpartition(":")
    if not sep:
        module_name, attr = default_module, func
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise TermError(f"{key}: func={func!r}: cannot import {module_name!r} ({err})") from None
    target = getattr(module, attr, None)
    if not callable(target):
        raise TermError(f"{key}: func={func!r}: {module_name} has no function {attr!r}")
    return target


def bind(func: Callable, params: dict, key: str, leading: int) -> Callable:
    """``func`` with ``params`` bound, after checking them against its signature; ``leading`` positional arguments
    (the env, and the mask for events and curricula) stay for the call."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return functools.partial(func, **params)
    parameters = list(signature.parameters.values())
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
    named = [p for p in parameters[leading:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    names = [p.name for p in named]
    extra = [k for k in params if k not in names]
    if extra and not takes_any:
        raise TermError(
            f"{key}: unknown parameter {extra[0]!r} of {_name(func)} (it takes: {', '.join(names) or 'none'})"
        )
    missing = [p.name for p in named if p.default is inspect.Parameter.empty and p.name not in params]
    if missing:
        raise TermError(f"{key}: missing parameter {missing[0]!r} of {_name(func)} (set {key}.params.{missing[0]})")
    return functools.partial(func, **params)


def _name(func: Callable) -> str:
    return f"{getattr(func, '__module__', '?')}:{getattr(func, '__qualname__', repr(func))}"


def check_output(value: Any, key: str, num_envs: int, kind: str) -> None:
    """The first value of an observation (2-d float), reward (1-d float) or termination (1-d bool) term."""
    expected = {
        "observation": "(num_envs, width) float",
        "reward": "(num_envs,) float",
        "termination": "(num_envs,) bool",
    }
    if not isinstance(value, torch.Tensor):
        raise TermError(f"{key}: returned {type(value).__name__}; a {kind} term returns a {expected[kind]} tensor")
    ok_dim = value.dim() == (2 if kind == "observation" else 1) and value.shape[0] == num_envs
    ok_dtype = value.dtype == torch.bool if kind == "termination" else value.is_floating_point()
    if not (ok_dim and ok_dtype):
        raise TermError(
            f"{key}: returned shape {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}; "
            f"a {kind} term returns {expected[kind].replace('num_envs', str(num_envs))}"
        )


def check_range(key: str, value, low_bound: float | None = None) -> tuple[float, float]:
    """A (low, high) pair of finite numbers with low <= high (and low >= ``low_bound``); a ``ValueError`` naming
    ``key`` otherwise (``guarded`` prefixes a term's key)."""
    import math

    pair = list(value) if isinstance(value, (list, tuple)) else [value]
    ok = len(pair) == 2 and all(isinstance(v, (int, float)) and math.isfinite(v) for v in pair) and pair[0] <= pair[1]
    if ok and low_bound is not None and pair[0] < low_bound:
        raise ValueError(f"{key}={pair}: the low end must be >= {low_bound:g}")
    if not ok:
        raise ValueError(f"{key}={pair}: expected [low, high], two finite numbers with low <= high")
    return float(pair[0]), float(pair[1])


def check_int_range(key: str, value) -> tuple[int, int]:
    """A (low, high) pair of integers with 0 <= low <= high; a ``ValueError`` naming ``key`` otherwise."""
    pair = list(value) if isinstance(value, (list, tuple)) else [value]
    ok = len(pair) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
    if not ok or not 0 <= pair[0] <= pair[1]:
        raise ValueError(f"{key}={pair}: expected [low, high], two whole numbers with 0 <= low <= high")
    return int(pair[0]), int(pair[1])


@dataclass
class BoundTerm:
    """A term ready to call: its key, name, config and its function with the parameters bound."""

    key: str
    """Where the term was declared (``rewards.track_lin_vel_xy``), for error messages."""
    name: str
    """The term's name in its table."""
    cfg: Any
    """The term's config."""
    call: Callable
    """Its function with its parameters bound: ``call(env)``."""


def bind_table(table: str, terms: dict[str, Any], leading: int, cfg_type: type) -> list[BoundTerm]:
    """Every term of one table, resolved and its parameters checked, in declaration order."""
    bound = []
    for name, cfg in terms.items():
        key = term_key(table, name)
        if not isinstance(cfg, cfg_type):
            raise TermError(f"{key}: expected a {cfg_type.__name__} ({{func: ..., params: {{...}}}}), got {cfg!r}")
        if not isinstance(cfg.params, dict):
            raise TermError(f"{key}.params={cfg.params!r}: expected a mapping of parameter names to values")
        bound.append(BoundTerm(key, name, cfg, bind(resolve_func(cfg.func, key), dict(cfg.params), key, leading)))
    return bound


def guarded(key: str, call: Callable, *args):
    """``call(*args)``, its one-line ``ValueError`` prefixed with the term's key: a message that starts with one of
    the term's parameters (``mass_range=[...]: ...``) names it in full (``env.events.<term>.params.mass_range``)."""
    try:
        return call(*args)
    except TermError:
        raise
    except ValueError as err:
        message = " ".join(str(err).split())
        param = message.partition("=")[0]
        if param in getattr(call, "keywords", {}):
            raise TermError(f"{key}.params.{message}") from None
        raise TermError(f"{key}: {message}") from None
