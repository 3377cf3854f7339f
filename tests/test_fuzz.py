"""Generated bad inputs (Hydra overrides, motion files, MJCF name maps) all end the same way: exit code 2, one
``error:`` line, no traceback, within seconds, and the log root untouched."""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from robolab.cli.motion import main as motion_main
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
    "agent.algorithm.num_mini_batches": ["0", "-2", *NOT_A_NUMBER],
    "agent.algorithm.schedule": ["sometimes", "[adaptive]", "123"],
    "agent.actor.hidden_dims": ["[0]", "[-4,4]", "[a]", "[1.5]"],
    "agent.obs_groups": ["abc", "[1,2]"],
    "env.num_envs": ["0", "-8", "1.5", *NOT_A_NUMBER],
    "env.sim_dt": ["0", "-0.005", "nan", "inf", *NOT_A_NUMBER],
    "env.decimation": ["0", "-4", *NOT_A_NUMBER],
    "env.observations.policy.history_length": ["0", "-1", *NOT_A_NUMBER],
    "env.observations.policy.enable_corruption": ["maybe", "[true]", "yes please"],
    "env.commands.base_velocity.params.lin_vel_x": ["[1]", "[1,2,3]", "abc", "5"],
    "env.rewards.feet_air_time.weight": ["abc", "[1]"],
    "env.rewards.feet_air_time.func": ["no_such_term", "nowhere:f", "123"],
    "env.events.push_robot.mode": ["often", "123"],
    "env.policy_history": ["2"],  # renamed: the error names the new key
    "env.backend": ["nope", "[mujoco]", "123"],
    "env.backend.num_variants": ["0", "-1", "abc"],
    "env.amp_terms": ["[nope]", "abc"],
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
