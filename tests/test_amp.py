"""Adversarial motion priors: clips, gaits, discriminator, and a discriminator kept identical across ranks."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import ROOT, clean_env, go2_robot, run, train_cmd
from robolab.amp.discriminator import Discriminator, gradient_penalty
from robolab.amp.features import AMP_TERMS
from robolab.amp.gait import GaitCfg, foot_positions, generate_clip, leg_geometry, leg_ik
from robolab.amp.motion import MotionFormatError, MotionLibrary, load_clip
from robolab.assets import load_robot
from robolab.cli.plot import read_scalars
from test_distributed import torchrun

DATA = ROOT / "source" / "robolab" / "amp" / "data"
ROBOT = go2_robot()
MOTION = [sys.executable, str(ROOT / "scripts" / "motion.py")]


def trot_clip():
    return load_clip(str(DATA / "go2_trot.npz"), ROBOT.joint_names, ROBOT.foot_bodies)


# --- clips and gaits ---------------------------------------------------------------------------------------
def test_leg_ik_inverts_forward_kinematics():
    robot = load_robot(ROBOT)
    rng = np.random.default_rng(0)
    q = np.array(ROBOT.default_joint_pos) + rng.uniform(-0.3, 0.3, (20, 12))
    feet = foot_positions(robot.model, robot, q)
    for i, leg in enumerate(("FL", "FR", "RL", "RR")):
        np.testing.assert_allclose(
            leg_ik(feet[:, i], leg_geometry(robot.model, leg)), q[:, 3 * i : 3 * i + 3], atol=1e-6
        )


@pytest.mark.parametrize(
    "gait, together, apart", [("trot", ("FL", "RR"), ("FL", "FR")), ("pace", ("FL", "RL"), ("FL", "FR"))]
)
def test_generated_gaits_phase_the_legs(gait, together, apart):
    clip = generate_clip(GaitCfg(gait=gait, duration=1.0))
    # lift above each foot's own stance height (front and rear stand at different heights)
    height = {
        leg: clip.foot_pos[:, i, 2] - clip.foot_pos[:, i, 2].min() for i, leg in enumerate(("FL", "FR", "RL", "RR"))
    }
    np.testing.assert_allclose(height[together[0]], height[together[1]], atol=1e-6)
    lifted = lambda h: h > 1e-3
    assert not np.any(lifted(height[apart[0]]) & lifted(height[apart[1]]))  # never both in the air
    np.testing.assert_allclose(clip.base_lin_vel[:, 0], 0.6)


@pytest.mark.slow
def test_shipped_clips_are_what_the_generator_makes(tmp_path):
    for gait in ("trot", "pace"):
        out = tmp_path / f"{gait}.npz"
        res = run([*MOTION, "generate", "--gait", gait, "--output", str(out)])
        assert res.returncode == 0, res.stderr
        fresh, shipped = np.load(out), np.load(DATA / f"go2_{gait}.npz")
        for field in shipped.files:
            if np.issubdtype(shipped[field].dtype, np.floating):  # forward kinematics: round-off across MuJoCo versions
                np.testing.assert_allclose(fresh[field], shipped[field], rtol=0, atol=1e-12, err_msg=field)
            else:
                np.testing.assert_array_equal(fresh[field], shipped[field], err_msg=field)


def test_loader_reorders_by_name_and_interpolates(tmp_path):
    data = dict(np.load(DATA / "go2_trot.npz"))
    order = np.random.default_rng(1).permutation(12)
    data["joint_names"], data["joint_pos"] = data["joint_names"][order], data["joint_pos"][:, order]
    data["joint_vel"] = data["joint_vel"][:, order]
    np.savez(tmp_path / "shuffled.npz", **data)
    clip = load_clip(str(tmp_path / "shuffled.npz"), ROBOT.joint_names, ROBOT.foot_bodies)
    np.testing.assert_array_equal(clip.joint_pos, trot_clip().joint_pos)
    lib = MotionLibrary([clip], AMP_TERMS)
    a, b, mid = (
        lib.state_at(0, torch.tensor([0.02])),
        lib.state_at(0, torch.tensor([0.04])),
        lib.state_at(0, torch.tensor([0.03])),
    )
    torch.testing.assert_close(mid, 0.5 * (a + b))
    s, s_next = lib.sample_pairs(64, dt=0.02, generator=torch.Generator().manual_seed(0))
    assert s.shape == (64, 42) and not torch.equal(s, s_next)


def test_sample_pairs_draws_each_clip_as_state_at_does_all_on_the_device():
    """The library's batched draw (no host read) interpolates as ``state_at`` does, clip by clip, edges included,
    and draws the clips in proportion to their weights."""
    trot = trot_clip()
    # A second clip of 40 frames at 2.5x the rate, its joints 10 rad off: its states are told apart by distance.
    short = dataclasses.replace(
        trot,
        fps=trot.fps * 2.5,
        **{f: getattr(trot, f)[:40] for f in ("joint_vel", "base_lin_vel", "base_ang_vel", "foot_pos")},
        joint_pos=trot.joint_pos[:40] + 10.0,
    )
    lib = MotionLibrary([trot, short], AMP_TERMS, weights=[1.0, 3.0])
    g = torch.Generator().manual_seed(3)
    which = torch.randint(0, 2, (400,), generator=g)
    times = torch.rand(400, generator=g) * 5.0 - 0.5  # before the start and past the end of both clips too
    batched = lib._states(which, times)
    for k in (0, 1):
        torch.testing.assert_close(batched[which == k], lib.state_at(k, times[which == k]))
    s, s_next = lib.sample_pairs(4000, dt=0.02, generator=torch.Generator().manual_seed(0))
    centres = torch.stack([lib._features[0].mean(0), lib._features[1].mean(0)])
    drawn = torch.cdist(s, centres).argmin(-1)
    assert torch.equal(drawn, torch.cdist(s_next, centres).argmin(-1))  # s and s' from the same clip
    assert drawn.float().mean().item() == pytest.approx(0.75, abs=0.03)
    assert not torch.equal(s, s_next)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.pop("foot_pos"), "missing fields ['foot_pos']"),
        (lambda d: d.update(fps=np.float64(0)), "fps=0.0 must be a frame rate in (0, 1000]"),
        (lambda d: d.update(fps=np.float64(1e9)), "fps=1000000000.0 must be a frame rate in (0, 1000]"),
        (lambda d: d.update(joint_vel=d["joint_vel"][:, :11]), "joint_vel has shape (201, 11), expected (201, 12)"),
        (
            lambda d: d.update(joint_names=np.array(["x"] + list(d["joint_names"][1:]))),
            "joints ['FL_hip_joint'] of the robot",
        ),
        (lambda d: d["joint_pos"].__setitem__((3, 3), np.nan), "joint_pos holds non-finite values"),
    ],
)
def test_loader_rejects_bad_clips_naming_the_problem(tmp_path, edit, message):
    data = dict(np.load(DATA / "go2_trot.npz"))
    edit(data)
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(MotionFormatError) as info:
        load_clip(str(tmp_path / "bad.npz"), ROBOT.joint_names, ROBOT.foot_bodies)
    assert message in str(info.value) and "bad.npz" in str(info.value)


@pytest.mark.slow
def test_motion_cli_inspects_and_converts(tmp_path):
    res = run([*MOTION, "inspect", str(DATA / "go2_trot.npz")])
    assert res.returncode == 0 and json.loads(res.stdout)["frames"] == 201
    data = dict(np.load(DATA / "go2_trot.npz"))
    data["joint_names"] = np.array([n.replace("_joint", "") for n in data["joint_names"]])
    np.savez(tmp_path / "other_names.npz", **data)
    out = tmp_path / "converted.npz"
    renames = [f"{n.replace('_joint', '')}={n}" for n in ROBOT.joint_names]
    res = run(
        [
            *MOTION,
            "convert",
            str(tmp_path / "other_names.npz"),
            "--output",
            str(out),
            "--fps",
            "25",
            "--rename",
            *renames,
        ]
    )
    assert res.returncode == 0, res.stderr
    clip = load_clip(str(out), ROBOT.joint_names, ROBOT.foot_bodies)
    assert clip.fps == 25 and clip.num_frames == 101
    np.testing.assert_allclose(clip.joint_pos[1], trot_clip().joint_pos[2], atol=1e-9)  # t = 0.04 s
    bad = run([*MOTION, "inspect", str(tmp_path / "other_names.npz")])
    assert bad.returncode == 2 and "of the robot are not in the clip" in bad.stderr


# --- discriminator -----------------------------------------------------------------------------------------
def test_discriminator_separates_expert_from_random_and_style_reward_prefers_expert():
    torch.manual_seed(0)
    lib = MotionLibrary([trot_clip()], AMP_TERMS)
    expert_s, expert_next = lib.sample_pairs(512, 0.02, generator=torch.Generator().manual_seed(1))
    scale = expert_s.std(dim=0) + 1e-3
    mean = expert_s.mean(dim=0)
    random_s, random_next = mean + scale * torch.randn(512, 42), mean + scale * torch.randn(512, 42)
    norm = lambda x: (x - mean) / scale
    disc = Discriminator(42, hidden_dims=(128, 128), loss_type="lsgan")
    opt = torch.optim.Adam(disc.parameters(), lr=1e-3)
    for _ in range(300):
        d_exp, gp = gradient_penalty(disc, norm(expert_s), norm(expert_next))
        loss = disc.loss(d_exp, disc(norm(random_s), norm(random_next))) + 0.1 * gp
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        d_e, d_r = disc(norm(expert_s), norm(expert_next)), disc(norm(random_s), norm(random_next))
        assert ((d_e > 0).float().mean() > 0.95) and ((d_r < 0).float().mean() > 0.95)
        r_e, r_r = (
            disc.style_reward(norm(expert_s), norm(expert_next)),
            disc.style_reward(norm(random_s), norm(random_next)),
        )
    assert r_e.min() >= 0 and r_e.max() <= 1 and r_r.min() >= 0 and r_r.max() <= 1
    assert r_e.mean() > r_r.mean() + 0.5


def test_bce_style_reward_is_bounded():
    disc = Discriminator(3, hidden_dims=(8,), loss_type="bce")
    with torch.no_grad():
        disc.net[-1].bias.fill_(1e4)  # an extreme output
        r = disc.style_reward(torch.zeros(4, 3), torch.zeros(4, 3))
    assert torch.isfinite(r).all() and r.max() <= -np.log(1e-4) + 1e-6


# --- pipeline ------------------------------------------------------------------------------------------------
AMP_SMALL = [
    "--task",
    "RoboLab-Velocity-Flat-Go2-AMP-v0",
    "--num_envs",
    "16",
    "env.backend.num_threads=1",
    "agent.num_steps_per_env=8",
    "agent.actor.hidden_dims=[32]",
    "agent.critic.hidden_dims=[32]",
    "agent.algorithm.amp_cfg.hidden_dims=[32]",
    "agent.algorithm.amp_cfg.batch_size=64",
    "agent.algorithm.amp_cfg.num_disc_updates=2",
]


@pytest.mark.slow
def test_amp_task_trains_and_logs_style_and_discriminator_figures(log_root):
    # On MuJoCo Warp (warp's CPU device here): the GPU backend serves AMP's `amp` group (foot positions included);
    # the two-rank AMP tests below run on MuJoCo C.
    res = run(train_cmd(*AMP_SMALL, "--max_iterations", "2", "--log_root", log_root, "env.backend=warp"))
    assert res.returncode == 0, res.stderr[-3000:]
    (run_dir,) = Path(log_root).glob("*/*")
    scalars = read_scalars(str(run_dir))
    for key in ("AMP/style_reward", "Loss/amp_discriminator", "Loss/amp_grad_penalty", "Loss/amp_d_expert"):
        assert [it for it, _, _ in scalars[key]] == [0, 1], key  # every iteration
    assert "Loss/amp_d_policy" in scalars


@pytest.mark.slow
def test_mismatched_pipeline_pair_and_missing_amp_group_are_errors(log_root):
    no_amp_keys = [a for a in AMP_SMALL if "amp_cfg" not in a]
    res = run(train_cmd(*no_amp_keys, "--max_iterations", "1", "--log_root", log_root, "algorithm=ppo"))
    assert res.returncode == 2 and "runner=amp does not work with algorithm=ppo" in res.stderr
    res = run(train_cmd(*AMP_SMALL, "--max_iterations", "1", "--log_root", log_root, "env.amp_terms=[]"))
    assert res.returncode == 2 and "runner=amp reads the observation group 'amp'" in res.stderr
    assert "env.amp_terms" in res.stderr and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["synced", "ppo_only"])
def test_two_ranks_keep_identical_discriminators_only_when_it_is_synchronised(tmp_path, mode):
    dump = tmp_path / "dump"
    dump.mkdir()
    args = [
        "--distributed",
        "--device",
        "cpu",
        *AMP_SMALL,
        "--max_iterations",
        "3",
        "--log_root",
        str(tmp_path / "logs"),
    ]
    if mode == "synced":  # on MuJoCo Warp (warp's CPU device): the GPU backend's path on 2 ranks
        args += ["--check_replication_every", "1", "env.backend=warp"]
    env = clean_env(PYTHONPATH=str(ROOT / "tests"))
    res = run(
        torchrun(2, str(ROOT / "tests" / "helpers" / "amp_sync.py"), str(dump), mode, *args), env=env, timeout=300
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    ranks = [json.loads((dump / f"rank{r}.json").read_text()) for r in range(2)]
    disc = lambda d: {k: v for k, v in d.items() if k.startswith("discriminator.")}
    actor = lambda d: {k: v for k, v in d.items() if k.startswith("actor.")}
    assert actor(ranks[0]) == actor(ranks[1])  # PPO itself is synchronised either way
    if mode == "synced":
        assert disc(ranks[0]) == disc(ranks[1])
    else:
        differing = [k for k in disc(ranks[0]) if ranks[0][k] != ranks[1][k]]
        assert differing, "an unsynchronised discriminator should drift apart across ranks"
