"""The env's control step recorded once as a CUDA graph and replayed every step (``env.cuda_graph=true``).

A control step of a declared MDP is a few hundred small kernels launched one by one from Python (every term, the
resets by mask, the observation groups) around one MuJoCo Warp graph of physics. At 4096 envs the launches take as
long as the physics. Replaying the whole step as one graph launches them all at once.

A graph replays kernels on the tensors they touched when it was captured. The MDP's Python does not write its state
in place: it rebinds attributes (``self.timer = torch.where(...)``), so after one step its state lives in new tensors,
which a replay would never read again. Before the capture, ``StateTree`` records every tensor the env reaches (its
attributes, its terms', commands', observation histories', caches', recursively); after the captured step it puts
each rebound location back on its old tensor and adds, at the end of the graph, the copy of the new value into it
(as one parallel assignment: a value that is itself overwritten is cloned first). So every replay starts from the
tensors the last one left. Python state that changes from step to step (a counter, a list that grows) cannot be
replayed: the capture stops with a one-line error naming it. Anything outside the step that rebinds what the graph
reads (``reset()``, a checkpoint's terrain levels) is noticed before the next replay (``mismatch``), and the step runs
eagerly and is captured anew.
"""

from __future__ import annotations

import dataclasses
import types
import warnings
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from robolab.cuda_capture import recording

SCALARS = (int, float, bool, complex, str, bytes, type(None))
SKIPPED_ATTRIBUTES = frozenset({"cfg"})
"""Attributes never walked: configs are constants by convention."""
OPAQUE_MODULES = ("torch", "numpy", "warp", "mujoco", "mujoco_warp", "tensorboard")


class HostSide:
    """An object whose state lives on the host between steps (a window's step count, the graph itself): the step never
    reads or writes it, so a captured step neither records nor checks it."""


class CaptureError(ValueError):
    """``env.cuda_graph=true`` cannot replay this env's step as a graph: one line naming what stands in the way."""


def _opaque(value: Any) -> bool:
    """A value compared by identity only (functions, modules, generators, arrays, library objects)."""
    if isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType, type)):
        return True
    if isinstance(value, (torch.Generator, torch.nn.Module, torch.device, torch.dtype, np.ndarray, np.generic)):
        return True
    return type(value).__module__.split(".")[0] in OPAQUE_MODULES or not (
        isinstance(value, (dict, list, tuple, TensorDict)) or hasattr(value, "__dict__")
    )


def _children(value: Any) -> dict:
    if isinstance(value, TensorDict):
        return dict(value.items())
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return dict(enumerate(value))
    return {k: v for k, v in vars(value).items() if k not in SKIPPED_ATTRIBUTES}


def _set(container: Any, key: Any, value: Any) -> None:
    if isinstance(container, TensorDict):
        container.set(key, value)
    elif isinstance(container, (dict, list)):
        container[key] = value
    else:
        setattr(container, key, value)


def _path(path: tuple) -> str:
    """``env.state.joint_vel``, ``env.term_cache['x']``: each element of ``path`` is made by ``_element``."""
    return "env" + "".join(path)


def _element(container: Any, key: Any) -> str:
    is_item = isinstance(container, (dict, list, tuple, TensorDict))
    return f"[{key!r}]" if is_item else f".{key}"


@dataclasses.dataclass
class _Node:
    value: Any
    children: dict[Any, _Node] | None = None


@dataclasses.dataclass
class Copy:
    """At the end of the graph, ``target`` (the tensor the location held before the step) takes ``source``'s value."""

    path: str
    target: torch.Tensor
    source: torch.Tensor


class StateTree:
    """What an object holds, recursively, as it was when recorded: tensors and objects by identity, Python values
    by value. ``restore`` compares the object now with the record and puts every rebound tensor back."""

    def __init__(self, root: Any, skip: tuple[type, ...] = ()):
        self.skip = (HostSide, *skip)
        self._seen: set[int] = set()
        self.root = self._record(root)
        self._paths: dict[tuple[int, Any], tuple] = {}
        self._locations = self._flatten(self.root, root, ())

    def _record(self, value: Any) -> _Node:
        if torch.is_tensor(value) or isinstance(value, (*SCALARS, *self.skip)) or _opaque(value):
            return _Node(value)
        if id(value) in self._seen:  # met before (a cycle, a shared object): walked once, compared by identity here
            return _Node(value)
        self._seen.add(id(value))
        return _Node(value, {k: self._record(v) for k, v in _children(value).items()})

    def _flatten(self, node: _Node, value: Any, path: tuple) -> list[tuple[Any, Any, Any]]:
        """(container, key, recorded value) of every location below ``node`` but Python values (a step keeps those
        equal; between steps only ``HostSide`` objects change): what ``mismatch`` checks."""
        out = []
        for key, child in (node.children or {}).items():
            if not isinstance(child.value, SCALARS):
                out.append((value, key, child.value))
                self._paths[id(value), key] = (*path, _element(value, key))
            out += self._flatten(child, child.value, (*path, _element(value, key)))
        return out

    @property
    def locations(self) -> list[tuple[Any, Any, Any]]:
        """(container, key, recorded value) of every recorded location that holds no Python value."""
        return self._locations

    def path_of(self, container: Any, key: Any) -> tuple:
        """The path elements of the location ``container[key]`` (or its attribute ``key``)."""
        return self._paths[id(container), key]

    def mismatch(self) -> str | None:
        """The first location that no longer holds what was recorded (something outside the step rebound it), as a
        path; None when all do."""
        for container, key, value in self._locations:
            if isinstance(container, (dict, list, tuple, TensorDict)):
                try:
                    current = container[key]
                except (KeyError, IndexError):
                    return _path(self.path_of(container, key))
            else:
                current = getattr(container, key, _MISSING)
            if current is not value:
                return _path(self.path_of(container, key))
        return None

    def restore(self, current: Any) -> list[Copy]:
        """Put every location of ``current`` (the recorded root, after a step) back on what was recorded; return the
        copies that carry the step's new values into the recorded tensors. Raises ``CaptureError`` where Python state
        changed."""
        copies: list[Copy] = []
        self._restore(self.root, current, (), copies)
        return copies

    def _restore(self, node: _Node, current: Any, path: tuple, copies: list[Copy]) -> Any:
        old = node.value
        if torch.is_tensor(old):
            if current is old:
                return old
            if not (torch.is_tensor(current) and current.shape == old.shape and current.dtype == old.dtype):
                new = f"{tuple(current.shape)} {current.dtype}" if torch.is_tensor(current) else type(current).__name__
                raise CaptureError(
                    f"{_path(path)} changes from a {tuple(old.shape)} {old.dtype} tensor to {new} in a step: "
                    "a captured step keeps every tensor's shape and type (env.cuda_graph=false runs it eagerly)"
                )
            copies.append(Copy(_path(path), old, current))
            return old
        if node.children is None:
            if current is old or (isinstance(old, SCALARS) and type(current) is type(old) and current == old):
                return old
            raise CaptureError(
                f"{_path(path)} is Python state that a step changes ({old!r:.40} -> {current!r:.40}): a CUDA graph "
                "replays only tensor work; keep it in a tensor, or run with env.cuda_graph=false"
            )
        if type(current) is not type(old):
            raise CaptureError(
                f"{_path(path)} changes type in a step ({type(old).__name__} -> {type(current).__name__})"
            )
        now = _children(current)
        if set(now) != set(node.children):
            added, removed = (
                sorted(map(str, set(now) - set(node.children))),
                sorted(map(str, set(node.children) - set(now))),
            )
            raise CaptureError(
                f"{_path(path)} gains {added or 'nothing'} and loses {removed or 'nothing'} in a step: "
                "a captured step keeps its state's structure (env.cuda_graph=false runs it eagerly)"
            )
        held = _children(old)  # what ``old`` holds at each key (a key set below does not change the others)
        for key, child in node.children.items():
            value = self._restore(child, now[key], (*path, _element(old, key)), copies)
            if not isinstance(old, tuple) and held.get(key) is not value:
                _set(old, key, value)
        return old


_MISSING = object()


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def assignment(
    copies: list[Copy], unchanged: list[tuple[str, torch.Tensor]]
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The copies as one parallel assignment: (target, source) pairs to run in order. Sources that a copy overwrites
    are cloned first; two targets in one storage must take consistent values (views of one new tensor, at the same
    offsets); a location the step leaves alone must not share memory with a target (the graph would change it where
    the eager step does not)."""
    targets = {}
    for c in copies:
        for other in targets.get(_storage(c.target), []):
            consistent = _storage(c.source) == _storage(other.source) and (
                c.target.storage_offset() - other.target.storage_offset()
                == c.source.storage_offset() - other.source.storage_offset()
            )
            if not consistent:
                raise CaptureError(
                    f"{c.path} and {other.path} share memory before a step but not after it: a captured step cannot "
                    "carry both (env.cuda_graph=false runs it eagerly)"
                )
        targets.setdefault(_storage(c.target), []).append(c)
    for path, tensor in unchanged:
        if _storage(tensor) in targets:
            raise CaptureError(
                f"{path} shares memory with {targets[_storage(tensor)][0].path}, which a step rebinds: a replay would "
                "change it too; hold a copy there (env.cuda_graph=false runs it eagerly)"
            )
    pairs = []
    for c in copies:
        source = c.source.clone() if _storage(c.source) in targets else c.source
        pairs.append((c.target, source))
    return pairs


def unchanged_tensors(tree: StateTree, copies: list[Copy]) -> list[tuple[str, torch.Tensor]]:
    """Every recorded tensor location that the step left alone (no copy carries a new value into it)."""
    copied = {c.path for c in copies}
    located = ((_path(tree.path_of(container, key)), value) for container, key, value in tree.locations)
    return [(path, value) for path, value in located if torch.is_tensor(value) and path not in copied]


def carry_over(tree: StateTree, root: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``restore`` and ``assignment`` together: after a (captured) step of ``root``, put its state back on the recorded
    tensors and return the parallel assignment that carries the new values into them."""
    copies = tree.restore(root)
    return assignment(copies, unchanged_tensors(tree, copies))


def run_assignment(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Copy each source into its target, in order (inside a capture: the graph's last kernels)."""
    with torch.no_grad():
        for target, source in pairs:
            target.copy_(source)


class CapturedEnvStep:
    """``env.step_body`` as one CUDA graph with an action tensor of its own; its outputs copied out after each replay
    (the runner keeps an observation across the next step, which a replay would overwrite)."""

    def __init__(self, env, actions: torch.Tensor, skip: tuple[type, ...]):
        self.env = env
        self.actions = actions.detach().clone()
        self.graph = torch.cuda.CUDAGraph()
        # The env's own generator (every term's draws) advances at each replay like the default one.
        self.graph.register_generator_state(env.generator)
        self.tree = StateTree(env, skip)
        stream = torch.cuda.Stream(env.device)
        with (
            recording(self.graph, stream, "env.cuda_graph", "the env's step", CaptureError),
            env.backend.captured(),
        ):
            obs, rewards, dones, extras = env.step_body(self.actions)
            run_assignment(carry_over(self.tree, env))
            self._scalars = _scalar_leaves(extras)
            # The 0-dim values (the episode log) leave the graph as one vector: one copy per step, not fifty.
            self._stacked = torch.stack([t.float() for _, t in self._scalars]) if self._scalars else None
        self.outputs = (obs, rewards, dones, extras)

    def mismatch(self) -> str | None:
        """The first location of the env's state that something outside the step rebound; None when none was."""
        return self.tree.mismatch()

    def replay(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        self.actions.copy_(actions)
        self.graph.replay()
        obs, rewards, dones, extras = self.outputs
        values = (
            dict(zip((p for p, _ in self._scalars), self._stacked.clone().unbind()))
            if self._stacked is not None
            else {}
        )
        return obs.clone(), rewards.clone(), dones.clone(), _copy_extras(extras, values, ())


def _scalar_leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, torch.Tensor]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _scalar_leaves(v, (*path, k))]
    return [(path, value)] if torch.is_tensor(value) and value.dim() == 0 else []


def _copy_extras(value: Any, scalars: dict, path: tuple) -> Any:
    if isinstance(value, dict):
        return {k: _copy_extras(v, scalars, (*path, k)) for k, v in value.items()}
    if torch.is_tensor(value):
        return scalars[path] if path in scalars else value.clone()
    return value


class StepGraph(HostSide):
    """When the env's step runs as a graph: captured after ``WARM_UP`` eager steps (lazy set-ups, first-call caches),
    replayed while the env's state is where the graph reads it, captured anew after something outside the step rebound
    it (``reset()``, a checkpoint load), and given up, with one warning, when that keeps happening."""

    WARM_UP = 2
    """Eager steps before a capture."""
    SHORT_LIVED = 100
    """A graph replayed fewer times than this before it had to be dropped was not worth its capture ..."""
    MAX_SHORT_LIVED = 3
    """... and after this many such in a row the step stays eager."""

    def __init__(self, env, skip: tuple[type, ...] = ()):
        self.env, self.skip = env, skip
        self.captured: CapturedEnvStep | None = None
        self.eager_left = self.WARM_UP
        self.replays = 0
        self.short_lived = 0
        self.given_up = False
        self.captures = 0
        """Graphs captured so far (a test reads it)."""

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        if self.captured is not None:
            moved = self.captured.mismatch()
            if moved is None:
                self.replays += 1
                return self.captured.replay(actions)
            self._drop(moved)
        if self.given_up or self.eager_left > 0:
            self.eager_left -= 1
            return self.env.step_body(actions)
        self.captured = CapturedEnvStep(self.env, actions, self.skip)
        self.captures += 1
        self.replays = 1
        return self.captured.replay(actions)

    def _drop(self, moved: str) -> None:
        self.short_lived = self.short_lived + 1 if self.replays < self.SHORT_LIVED else 0
        self.captured, self.eager_left = None, self.WARM_UP
        if self.short_lived >= self.MAX_SHORT_LIVED and not self.given_up:
            self.given_up = True
            warnings.warn(
                f"env.cuda_graph: {moved} is rebound outside the env's step every few steps, and each time the step "
                "must be captured anew: it runs eagerly from now on (assign in place there, e.g. with copy_)",
                stacklevel=3,
            )


def step_as_captured(env, actions: torch.Tensor, skip: tuple[type, ...] = ()) -> tuple:
    """One step of ``env`` done the way a captured step does it, but eagerly, on any device: its state recorded, the
    step, the state carried back onto the recorded tensors. The values are the eager step's; what a graph could not
    replay raises ``CaptureError`` here too (the tests hold every task's step to it on the CPU)."""
    tree = StateTree(env, skip)
    out = env.step_body(actions)
    run_assignment(carry_over(tree, env))
    moved = tree.mismatch()
    assert moved is None, f"{moved} was not put back"
    return out
