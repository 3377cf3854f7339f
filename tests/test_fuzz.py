"""Generated bad inputs (Hydra overrides, motion files, MJCF name maps) all end the same way: exit code 2, one
``error:`` line, no traceback, within seconds, and the log root untouched."""

from __future__ import annotations

import contextlib
import io
import signal
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from robolab import checkpoint
from robolab.cli.motion import main as motion_main
from robolab.cli.play import main as play_main
from robolab.cli.train import main as train_main

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WORK = Path(tempfile.mkdtemp(prefix="robolab-fuzz-"))
LOG_ROOT = WORK / "logs"
SMALL = ["--num_envs", "4", "env.backend.num_threads=1", "--max_iterations", "1", "--log_root", str(LOG_ROOT)]

# Values that are wrong for each key (wrong type, out of range, not a number, broken syntax).
NOT_A_NUMBER = ["abc", "[1,2", "{a: 1}", "null", "''"]
BAD = {
    "agent.save_interval": ["0", "-3", "1.5", *NOT_A_NUMBER],
    "agent.max_iterations": ["0", "-1", *NOT_A_NUMBER],
    "agent.num_steps_per_env": ["0", "2.5", *NOT_A_NUMBER],
    "agent.algorithm.learning_rate": ["0", "-1e-3", "nan", "inf", "1e400", *NOT_A_NUMBER],
    "agent.algorithm.gamma": ["1.5", "-0.1", "nan", *NOT_A_NUMBER],
    "agent.algorithm.num_mini_batches": ["0", "-2", "100000", *NOT_A_NUMBER],
    "agent.algorithm.schedule": ["sometimes", "[adaptive]", "123"],
    "agent.actor.hidden_dims": ["[0]", "[-4,4]", "[a]", "[1.5]", "[]"],
    "agent.obs_groups": ["abc", "[1,2]"],
    "env.num_envs": ["0", "-8", "1.5", *NOT_A_NUMBER],
    "env.sim_dt": ["0", "-0.005", "nan", "inf", *NOT_A_NUMBER],
    "env.decimation": ["0", "-4", *NOT_A_NUMBER],
    "env.observations.policy.history_length": ["0", "-1", "1000000000", *NOT_A_NUMBER],
    "env.observations.critic.terms.friction.history_length": ["1000000000", "0"],  # a buffer of GBs: OOM-killed
    "env.observations.policy.enable_corruption": ["maybe", "[true]", "yes please"],
    "env.commands.base_velocity.params.lin_vel_x": ["[1]", "[1,2,3]", "abc", "5"],
    "env.rewards.feet_air_time.weight": ["abc", "[1]"],
    "env.rewards.feet_air_time.func": ["no_such_term", "nowhere:f", "123"],
    "env.events.push_robot.mode": ["often", "123"],
    "env.policy_history": ["2"],  # renamed: the error names the new key
    "env.backend": ["nope", "[mujoco]", "123"],
    "env.backend.num_variants": ["0", "-1", "abc"],
    "env.amp_terms": ["[nope]", "abc"],
    "env.episode_length_s": ["0", "-1", "1e308"],
    "env.action_scale": ["nan", "inf"],
    "env.rewards.track_lin_vel_xy.weight": ["nan", "1e30"],
    "agent.actor.class_name": ["Nope", "nowhere:Model", "robolab.runners:Nope"],
    "agent.algorithm.class_name": ["nope:X", "rsl_rl.algorithms.Nope"],
    "agent.runner_class_name": ["robolab.runners:Nope", "builtins:nothing"],
    "agent.algorithm.entropy_coef": ["nan", "-inf"],
    "agent.algorithm.num_learning_epochs": ["1000000000"],
    "seed": ["1180591620717411303424", "-2"],
    "+new_key": ["1"],
    "+agent.bogus_key": ["1"],
    "+distributed.timeout_sec": ["5"],
    "+agent.actor.bogus": ["1"],
    "env.backend.num_threads": ["1000000000"],
}
NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).map(lambda s: f"x_{s}")


def run_main(main, argv: list[str]) -> tuple[int, str, float]:
    err = io.StringIO()
    start = time.time()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue(), time.time() - start


def assert_refused(code: int, stderr: str, seconds: float) -> None:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert code == 2, stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in stderr, stderr[-2000:]
    assert seconds < 20
    assert not LOG_ROOT.exists() or not any(LOG_ROOT.rglob("*")), "a refused start wrote into the log root"


@FUZZ
@given(key=st.sampled_from(sorted(BAD)), data=st.data())
def test_bad_overrides_are_refused_in_one_line(key, data):
    value = data.draw(st.sampled_from(BAD[key]))
    task = "RoboLab-Velocity-Flat-Go2-AMP-v0" if key.startswith("env.amp") else "RoboLab-Velocity-Flat-Go2-v0"
    assert_refused(*run_main(train_main, ["--task", task, *SMALL, f"{key}={value}"]))


@FUZZ
@given(section=st.sampled_from(["env", "agent", "agent.algorithm", "env.rewards", "env.robot"]), name=NAME)
def test_unknown_keys_are_refused_in_one_line(section, name):
    assert_refused(*run_main(train_main, [*SMALL, f"{section}.{name}=1"]))


@FUZZ
@given(
    field=st.sampled_from(["joint_names", "foot_bodies", "undesired_contact_bodies", "termination_contact_bodies"]),
    names=st.lists(NAME, min_size=1, max_size=4),
    base=st.one_of(st.none(), NAME),
)
def test_robot_name_maps_naming_what_the_model_lacks_are_refused(field, names, base):
    argv = [*SMALL, f"env.robot.{field}=[{','.join(names)}]"]
    if base is not None:
        argv.append(f"env.robot.base_body={base}")
    assert_refused(*run_main(train_main, argv))


CLIP = dict(np.load(ROOT / "source" / "robolab" / "amp" / "data" / "go2_trot.npz"))
ARRAYS = ["joint_pos", "joint_vel", "base_lin_vel", "base_ang_vel", "foot_pos"]


def corrupt(data: dict, how: str, field: str, rng: np.random.Generator) -> None:
    """Break the clip in one way (each makes it invalid; an earlier corruption may have removed ``field``)."""
    if how in ("scalar", "shape", "text", "nan") and field not in data:
        how = "drop"
    if how == "shape" and np.ndim(data[field]) == 0:
        how = "text"
    if how == "drop":
        data.pop(field if field in data else "fps", None)
    elif how == "scalar":
        data[field] = np.float64(rng.normal())
    elif how == "shape":
        data[field] = rng.normal(size=(*np.shape(data[field])[:-1], np.shape(data[field])[-1] + 1))
    elif how == "text":
        data[field] = np.full(np.shape(data[field]), "x")
    elif how == "nan":
        data[field] = np.full(np.shape(data[field]), np.nan)
    elif how == "fps":
        choices = [np.array([50.0, 50.0]), np.array(-1.0), np.array("fast"), np.array(np.inf)]
        data["fps"] = choices[int(rng.integers(len(choices)))]
    elif how == "names":
        data["joint_names"] = np.array([f"j{i}" for i in range(len(data["joint_names"]))])
    elif how == "short":
        for name in ARRAYS:
            if name in data and np.ndim(data[name]) > 0:
                data[name] = data[name][:1]


@FUZZ
@given(
    corruptions=st.lists(
        st.tuples(
            st.sampled_from(["drop", "scalar", "shape", "text", "nan", "fps", "names", "short"]),
            st.sampled_from(ARRAYS),
        ),
        min_size=1,
        max_size=3,
    ),
    seed=st.integers(0, 2**16),
)
def test_broken_motion_files_are_refused_in_one_line(corruptions, seed):
    data = dict(CLIP)
    rng = np.random.default_rng(seed)
    for how, field in corruptions:
        corrupt(data, how, field, rng)
    path = WORK / "clip.npz"
    np.savez(path, **data)
    code, stderr, seconds = run_main(motion_main, ["inspect", str(path)])
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: motion file"), stderr[-2000:]
    assert seconds < 20


# --- names: no write outside the log root, whatever the name --------------------------------------------------------
PATHLIKE = st.lists(st.sampled_from([*"ab/.-_ é~$'\"\\", "..", "日本", "\t", "\n"]), min_size=1, max_size=10).map(
    "".join
)


@FUZZ
@given(flag=st.sampled_from(["--run_name", "--experiment_name"]), name=st.one_of(PATHLIKE, st.text(min_size=1)))
def test_a_run_never_writes_outside_its_log_root_whatever_its_name(flag, name):
    work = Path(tempfile.mkdtemp(prefix="robolab-names-", dir=WORK))
    log_root = work / "logs"
    code, stderr, _ = run_main(
        train_main, [*SMALL, "--log_root", str(log_root), flag, name, "agent.num_steps_per_env=4"]
    )
    written = list(work.rglob("*"))
    outside = [p for p in written if p != log_root and log_root not in p.parents]
    assert not outside, f"{flag}={name!r} wrote {outside}"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if code == 2:  # refused: one line, nothing written
        assert len(lines) == 1 and lines[0].startswith("error: ") and not written, stderr[-2000:]
    else:
        assert code == 0, stderr[-2000:]
        experiment = name if flag == "--experiment_name" else "go2_flat"
        (run_dir,) = [p for p in (log_root / experiment).iterdir() if p.is_dir()]
        if flag == "--run_name":
            assert checkpoint.run_name_of(run_dir.name) == name  # found again by exactly this name


# --- every numeric setting: NaN and infinity are refused, any other value runs or is refused in one line -------------
def numeric_leaves(task: str) -> list[tuple[str, str, int]]:
    """(dotted key, int | float | list, length) of every number in the task's agent and env configs; a list of
    numbers (a range) is one leaf, overridden whole."""
    from robolab.config import agent_dict, build_env_cfg, compose, leaves

    found = [*leaves(agent_dict(compose(task, [])), "agent"), *leaves(build_env_cfg(task, {}), "env")]
    out: dict[str, tuple[str, int]] = {}
    for path, value in found:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        parent, _, last = path.rpartition(".")
        if last.isdigit():  # an element of a list of numbers
            out[parent] = ("list", out.get(parent, ("list", 0))[1] + 1)
        else:
            out[path] = ("float" if isinstance(value, float) else "int", 1)
    return [(path, kind, length) for path, (kind, length) in out.items()]


LEAVES = numeric_leaves("RoboLab-Velocity-Flat-Go2-v0")


@contextlib.contextmanager
def deadline(seconds: int):
    """A hang fails the example instead of the suite (SIGALRM in the test's own thread)."""

    def expired(*_):
        raise TimeoutError(f"no result within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaf=st.sampled_from(LEAVES), value=st.sampled_from(["nan", "inf", "-inf", "0", "-1", "huge"]))
def test_every_numeric_setting_is_refused_in_one_line_or_runs(leaf, value):
    path, kind, length = leaf
    if kind == "int" and value in ("nan", "inf", "-inf"):
        value = "huge"
    number = {"huge": "1000000000" if kind == "int" else "1e30"}.get(value, value)
    override = f"{path}=[{','.join([number] * length)}]" if kind == "list" else f"{path}={number}"
    work = Path(tempfile.mkdtemp(prefix="robolab-leaf-", dir=WORK))
    log_root = work / "logs"
    with deadline(120):
        code, stderr, _ = run_main(
            train_main, [*SMALL, "--log_root", str(log_root), "agent.num_steps_per_env=4", override]
        )
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if value in ("nan", "inf", "-inf") or (value == "huge" and kind != "int"):
        assert code == 2, f"{override} was accepted"
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{override}: {stderr[-2000:]}"
        assert not log_root.exists(), f"{override} was refused after writing"
    else:
        assert code == 0 and "Traceback" not in stderr, f"{override}: {stderr[-2000:]}"


# --- a run directory's files: never a traceback, never an import outside robolab's own ------------------------------
YAML_VALUES = st.one_of(
    st.sampled_from(["[", "{a: [}", "- 1", "'", "abc", "null", "{}", "123", "!!python/object:os.system {}"]),
    st.text(max_size=40),
)


@FUZZ
@given(file=st.sampled_from(["agent.yaml", "env.yaml"]), text=YAML_VALUES, keep_head=st.integers(0, 40))
def test_play_reads_any_run_directory_file_in_one_line_or_plays(file, text, keep_head, trained_run):
    run_dir, log_root = trained_run
    path = run_dir / "params" / file
    original = path.read_text()
    head = "\n".join(original.splitlines()[:keep_head])  # a truncated file, then garbage
    try:
        path.write_text(f"{head}\n{text}\n" if keep_head else text)
        with deadline(120):
            code, stderr, _ = run_main(
                play_main, ["--log_root", str(log_root), "--num_envs", "2", "--steps", "2", "--no_export"]
            )
    finally:
        path.write_text(original)
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert code in (0, 2) and "Traceback" not in stderr, stderr[-2000:]
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr[-2000:]


@pytest.fixture(scope="module")
def trained_run():
    log_root = WORK / "played"
    assert train_main([*SMALL, "--log_root", str(log_root), "agent.num_steps_per_env=4"]) == 0
    (run_dir,) = [p for p in (log_root / "go2_flat").iterdir() if p.is_dir()]
    return run_dir, log_root
