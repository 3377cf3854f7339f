"""The env's step as a CUDA graph replays it (``env.cuda_graph``): its state carried from step to step on the tensors
the graph reads. On the CPU: every task's step, done the way a captured step does it (``step_as_captured``), gives the
eager step's values and leaves no Python state changed; what a graph cannot replay is a one-line error naming it. On a
GPU (ROBOLAB_TEST_DEVICE=cuda, through the device tool): the graph's trajectory is the eager one's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from robolab.envs import VelocityEnv, captured_step
from robolab.envs.backends.base import PhysicsBackend
from robolab.envs.captured_step import CaptureError, StateTree, StepGraph, step_as_captured
from robolab.envs.terms import RewardTermCfg
from robolab.tasks.registry import list_tasks, load_env_cfg

DEVICE = os.environ.get("ROBOLAB_TEST_DEVICE", "cpu")
TASKS = [t for t in list_tasks() if t.startswith("RoboLab-")]


def make_env(task: str, num_envs: int = 6, seed: int = 4, device: str = "cpu", **changes) -> VelocityEnv:
    cfg = load_env_cfg(task)
    cfg.num_envs, cfg.seed, cfg.device = num_envs, seed, device
    cfg.episode_length_s = 0.5  # resets within the test's steps
    if device == "cpu":
        cfg.backend.name, cfg.backend.num_threads = "mujoco", 1
    for key, value in changes.items():
        setattr(cfg, key, value)
    return VelocityEnv(cfg)


def actions_for(env: VelocityEnv, steps: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(11)
    return [(0.5 * torch.randn(env.num_envs, env.num_actions, generator=g)).to(env.device) for _ in range(steps)]


def step_as_graphed(env: VelocityEnv, actions: torch.Tensor, step: int):
    """The env's step as ``StepGraph`` runs it: eagerly for the warm-up, then as a captured step does it."""
    if step < StepGraph.WARM_UP:
        return env.step(actions)
    out = step_as_captured(env, actions, skip=(PhysicsBackend,))
    env.divergence.end_step()
    return out


def assert_same_step(a, b, atol: float = 0.0) -> None:
    (obs_a, rew_a, done_a, extras_a), (obs_b, rew_b, done_b, extras_b) = a, b
    assert set(obs_a.keys()) == set(obs_b.keys())
    for key in obs_a.keys():  # noqa: SIM118 - iterating a TensorDict walks its batch
        torch.testing.assert_close(obs_b[key], obs_a[key], atol=atol, rtol=0, msg=lambda m, key=key: f"{key}: {m}")
    torch.testing.assert_close(rew_b, rew_a, atol=atol, rtol=0)
    assert torch.equal(done_a, done_b)
    for name, value in extras_a["log"].items():
        torch.testing.assert_close(extras_b["log"][name], value, atol=atol, rtol=0, equal_nan=True, msg=name)


@pytest.mark.parametrize("task", TASKS)
def test_every_tasks_step_done_as_captured_is_the_eager_step(task):
    eager, captured = make_env(task), make_env(task)
    for step, actions in enumerate(actions_for(eager, 30)):
        expected = eager.step(actions)
        assert_same_step(expected, step_as_graphed(captured, actions, step))
    assert eager.episode_length_buf.lt(step).any(), "some episode should have restarted (else resets go untested)"


def test_a_command_curriculum_counts_on_the_device():
    limits = {"lin_vel_x": (-2.0, 2.0)}
    curriculum = {
        "command_ranges": {
            "func": "command_ranges",
            "params": {"limits": limits, "every_s": 0.1, "error_threshold": 100.0},
        }
    }
    from robolab.envs.terms import CurriculumTermCfg

    curricula = {name: CurriculumTermCfg(**c) for name, c in curriculum.items()}
    eager = make_env("RoboLab-Velocity-Flat-Go2-v0", curricula=curricula)
    captured = make_env("RoboLab-Velocity-Flat-Go2-v0", curricula=dict(curricula))
    for step, actions in enumerate(actions_for(eager, 60)):
        assert_same_step(eager.step(actions), step_as_graphed(captured, actions, step))
    assert captured.command_terms["base_velocity"].ranges["lin_vel_x"].tolist() != [-1.0, 1.0]


def counting_reward(env) -> torch.Tensor:
    env.term_cache["calls"] = env.term_cache.get("calls", 0) + 1  # Python state a graph would not replay
    return torch.zeros(env.num_envs, device=env.device)


def test_python_state_a_step_changes_is_a_one_line_error_naming_it():
    rewards = {**load_env_cfg("RoboLab-Velocity-Flat-Go2-v0").rewards}
    rewards["counting"] = RewardTermCfg(func=counting_reward, weight=1.0)
    env = make_env("RoboLab-Velocity-Flat-Go2-v0", rewards=rewards)
    env.step(torch.zeros(6, 12))
    with pytest.raises(CaptureError, match=r"^env.term_cache\['calls'\] is Python state that a step changes") as err:
        step_as_captured(env, torch.zeros(6, 12), skip=(PhysicsBackend,))
    assert "\n" not in str(err.value)


class Holder:
    def __init__(self):
        self.a = torch.zeros(3)
        self.b = self.a  # one tensor at two places


def step_rebinding_one(holder):
    holder.a = holder.a + 1  # b keeps the old tensor: eagerly it is unchanged, a replay would change it


def test_a_tensor_kept_elsewhere_that_a_step_rebinds_is_refused():
    from robolab.envs.captured_step import carry_over

    holder = Holder()
    tree = StateTree(holder)
    step_rebinding_one(holder)
    with pytest.raises(CaptureError, match=r"env.b shares memory with env.a"):
        carry_over(tree, holder)


def test_rebound_state_is_carried_as_one_parallel_assignment():
    from robolab.envs.captured_step import carry_over, run_assignment

    class Swap:
        def __init__(self):
            self.x, self.y = torch.tensor([1.0]), torch.tensor([2.0])

    s = Swap()
    old_x, old_y = s.x, s.y
    tree = StateTree(s)
    s.x, s.y = s.y, s.x  # a step that swaps: each new value is the other's old tensor
    run_assignment(carry_over(tree, s))
    assert s.x is old_x and s.y is old_y
    assert s.x.item() == 2.0 and s.y.item() == 1.0, "a copy read a value another copy had overwritten"


def test_cuda_graph_off_a_gpu_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^env.cuda_graph=true needs a CUDA device and env.backend=warp") as err:
        make_env("RoboLab-Velocity-Flat-Go2-v0", cuda_graph=True)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("setting", "device", "backend", "replayed"),
    [
        (None, "cpu", "auto", False),  # the default: on only where it can run
        (None, "cuda", "auto", True),
        (None, "cuda:1", "warp", True),
        (None, "cuda", "mujoco", False),  # MuJoCo C has no graph to replay
        (False, "cuda", "warp", False),
        (True, "cuda", "warp", True),
    ],
)
def test_the_env_graph_is_on_by_default_only_where_it_can_run(setting, device, backend, replayed):
    cfg = load_env_cfg("RoboLab-Velocity-Flat-Go2-v0")
    assert cfg.cuda_graph is None, "unset by default"
    cfg.cuda_graph, cfg.device, cfg.backend.name = setting, device, backend
    assert cfg.uses_cuda_graph() is replayed


gpu = pytest.mark.skipif(DEVICE != "cuda", reason="needs a GPU: ROBOLAB_TEST_DEVICE=cuda through the device tool")


def warp_env(task: str, cuda_graph: bool, num_envs: int = 64):
    cfg = load_env_cfg(task)
    cfg.num_envs, cfg.seed, cfg.device, cfg.cuda_graph = num_envs, 4, "cuda", cuda_graph
    cfg.episode_length_s = 0.5
    cfg.backend.name = "warp"
    return VelocityEnv(cfg)


def far_rows(a, b, tolerance: float = 1e-3) -> int:
    """Env rows of a step whose observations or reward differ by more than ``tolerance`` between two envs."""
    (obs_a, rew_a, *_), (obs_b, rew_b, *_) = a, b
    far = (rew_a - rew_b).abs() > tolerance
    for key in obs_a.keys():  # noqa: SIM118 - iterating a TensorDict walks its batch
        far |= (obs_a[key] - obs_b[key]).abs().amax(dim=1) > tolerance
    return int(far.sum())


def assert_graph_within_eager_spread(steps: int, task: str, reset_at: int | None = None) -> VelocityEnv:
    """MuJoCo Warp's contact sums need not add in one order: two eager envs of one seed part by ~1e-5, and now and
    then an env's contact or termination flips and its row parts for good. So the graph is held to the eager spread:
    no more env rows parted from the eager env than a second eager env parts (plus 2 %); a graph that replayed a stale
    state would part every row."""
    eager, twin, graphed = warp_env(task, False), warp_env(task, False), warp_env(task, True)
    far_twin = far_graph = rows = 0
    for i, actions in enumerate(actions_for(eager, steps)):
        if i == reset_at:
            eager.reset(), twin.reset(), graphed.reset()
        a, b, c = eager.step(actions), twin.step(actions), graphed.step(actions)
        far_twin, far_graph, rows = far_twin + far_rows(a, b), far_graph + far_rows(a, c), rows + eager.num_envs
    print(f"{task}: env rows parted from the eager env: graph {far_graph}, eager twin {far_twin}, of {rows}")
    assert far_graph <= 2 * far_twin + 0.02 * rows
    return graphed


@gpu
@pytest.mark.parametrize(
    "task",
    [
        "RoboLab-Velocity-Flat-Go2-v0",
        "RoboLab-Velocity-Rough-Go2-Teacher-v0",
        "RoboLab-Velocity-Flat-Go2-Realism-v0",
        "RoboLab-Velocity-Flat-G1-AMP-v0",
    ],
)
def test_the_graphs_trajectory_is_the_eager_one(task):
    graphed = assert_graph_within_eager_spread(60, task)
    assert graphed.step_graph is not None
    assert graphed.step_graph.captures == 1 and graphed.step_graph.replays == 58


@gpu
def test_a_reset_between_steps_is_noticed_and_captured_anew():
    graphed = assert_graph_within_eager_spread(24, "RoboLab-Velocity-Flat-Go2-v0", reset_at=10)
    assert graphed.step_graph is not None and graphed.step_graph.captures == 2


class EagerCapture:
    """Stands in for ``CapturedEnvStep`` on the CPU: records the state at capture, replays as a captured step does."""

    def __init__(self, env, actions, skip):
        self.env, self.skip, self.tree = env, skip, StateTree(env, skip)

    def mismatch(self):
        return self.tree.mismatch()

    def replay(self, actions):
        return step_as_captured(self.env, actions, self.skip)


def test_the_step_graph_is_captured_after_a_warm_up_anew_after_a_reset_and_given_up_when_it_keeps_moving(
    monkeypatch,
):
    monkeypatch.setattr(captured_step, "CapturedEnvStep", EagerCapture)
    eager, graphed = make_env("RoboLab-Velocity-Flat-Go2-v0"), make_env("RoboLab-Velocity-Flat-Go2-v0")
    graphed.step_graph = StepGraph(graphed, skip=(PhysicsBackend,))
    graph = graphed.step_graph
    # Three graphs in a row dropped after fewer than SHORT_LIVED replays: the step stays eager, said once.
    with pytest.warns(UserWarning, match=r"env.cuda_graph: env\.\S+ is rebound outside the env's step every few steps"):
        for i, actions in enumerate(actions_for(eager, 30)):
            if i in (10, 14, 18):  # a reset rebinds the state: noticed, two eager steps, then captured anew
                eager.reset(), graphed.reset()
            assert_same_step(eager.step(actions), graphed.step(actions))
            if i == 2:
                assert graph.captures == 1 and graph.replays == 1
            if i == 13:
                assert graph.captures == 2 and not graph.given_up
    assert graph.given_up and graph.captures == 3 and graph.captured is None


class State:
    def __init__(self):
        self.x = torch.zeros(3)
        self.table = {"a": torch.zeros(2)}
        self.base = torch.zeros(4)
        self.head, self.tail = self.base[:2], self.base[2:]  # two views of one tensor


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (lambda s: setattr(s, "x", torch.zeros(4)), r"^env.x changes from a \(3,\) torch.float32 tensor to \(4,\)"),
        (lambda s: setattr(s, "table", [torch.zeros(2)]), r"^env.table changes type in a step \(dict -> list\)"),
        (lambda s: s.table.update(b=torch.zeros(1)), r"^env.table gains \['b'\] and loses nothing in a step"),
        (
            lambda s: (setattr(s, "head", torch.ones(2)), setattr(s, "tail", torch.ones(2))),
            r"^env.(head|tail) and env.(head|tail) share memory before a step but not after it",
        ),
    ],
    ids=["shape", "type", "structure", "views"],
)
def test_what_a_graph_cannot_carry_is_a_one_line_error_naming_it(step, message):
    from robolab.envs.captured_step import carry_over

    state = State()
    tree = StateTree(state)
    step(state)
    with pytest.raises(CaptureError, match=message) as err:
        carry_over(tree, state)
    assert "\n" not in str(err.value)


def test_a_tensor_and_its_views_rebound_to_one_new_tensor_and_its_views_are_carried():
    from robolab.envs.captured_step import carry_over, run_assignment

    state = State()
    base, head, tail, tree = state.base, state.head, state.tail, StateTree(state)
    new = torch.arange(4.0)
    state.base, state.head, state.tail = new, new[:2], new[2:]
    run_assignment(carry_over(tree, state))
    assert state.base is base and state.head is head and state.tail is tail
    assert base.tolist() == [0.0, 1.0, 2.0, 3.0] and head.tolist() == [0.0, 1.0]


@gpu
@pytest.mark.parametrize(
    "part, setting, error",
    [("env", "env.cuda_graph", "CaptureError"), ("update", "agent.algorithm.cuda_graph", "CudaGraphError")],
)
def test_a_capture_cuda_refuses_is_one_line_naming_the_setting_to_turn_off(part, setting, error):
    """A host read inside the env's step or the PPO update: CUDA refuses the capture, and the run stops with one line
    that names the setting (through the shared ``robolab.cuda_capture.recording``)."""
    helper = Path(__file__).parent / "helpers" / "refused_capture.py"
    done = subprocess.run([sys.executable, str(helper), part], capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    refused = json.loads(done.stdout.strip().splitlines()[-1])
    assert refused["type"] == error, refused
    message = refused["message"]
    name = re.escape(setting)
    assert re.fullmatch(rf"{name}=true: capturing .+ failed \(.+\); run with {name}=false", message), message
    assert "\n" not in message
