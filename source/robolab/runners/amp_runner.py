"""robolab's ``AMPRunner``: ``OnPolicyRunner`` (and its distributed wiring) with the motion prior wired in."""

from __future__ import annotations

from robolab.algorithms.ppo_amp import PPOAMP
from robolab.runners.on_policy_runner import OnPolicyRunner


class AMPRunner(OnPolicyRunner):
    """Hands the env's AMP definition (terms, step dt, joint and foot names) to ``PPOAMP`` before it is built.

    Style reward, discriminator loss, gradient penalty and the discriminator's mean output on expert and policy
    pairs are logged every iteration (``AMP/style_reward`` and ``Loss/amp_*`` in TensorBoard and the console).
    """

    alg: PPOAMP

    def __init__(self, env, train_cfg: dict, *args, **kwargs) -> None:
        if not getattr(env.cfg, "amp_terms", None):
            raise ValueError("AMPRunner needs an env with an `amp` observation group (set env.amp_terms)")
        amp_cfg = train_cfg["algorithm"].setdefault("amp_cfg", {})
        # The embedded env names joints and feet in its robot config; Isaac Lab tasks carry them beside amp_terms.
        robot = getattr(env.cfg, "robot", None)
        joint_names = getattr(env.cfg, "amp_joint_names", None) or list(robot.joint_names)
        foot_names = getattr(env.cfg, "amp_foot_names", None) or list(robot.foot_bodies)
        amp_cfg.update(
            terms=list(env.cfg.amp_terms), step_dt=env.step_dt, joint_names=list(joint_names),
            foot_names=list(foot_names),
        )
        super().__init__(env, train_cfg, *args, **kwargs)
