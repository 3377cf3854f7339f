"""robolab's ``AMPRunner``: ``OnPolicyRunner`` (and its distributed wiring) with the motion prior wired in."""

from __future__ import annotations

from robolab.algorithms.ppo_amp import PPOAMP
from robolab.runners.on_policy_runner import OnPolicyRunner


def amp_state_of(env) -> dict:
    """The env's AMP definition: its state terms, control dt, and the joint and foot names of the clips' columns.

    The embedded env names joints and feet in its robot config; Isaac Lab tasks carry them beside ``amp_terms``.
    """
    cfg = env.cfg
    if not getattr(cfg, "amp_terms", None):
        raise ValueError(
            "runner=amp needs an env with an `amp` observation group: set env.amp_terms (embedded tasks) or add an "
            "`amp` group to the Isaac Lab env config (robolab.tasks.isaaclab.env_cfgs.add_amp_group)"
        )
    robot = getattr(cfg, "robot", None)
    joint_names = getattr(cfg, "amp_joint_names", None) or robot.joint_names
    foot_names = getattr(cfg, "amp_foot_names", None) or robot.foot_bodies
    return {
        "terms": list(cfg.amp_terms),
        "step_dt": float(env.step_dt),
        "joint_names": list(joint_names),
        "foot_names": list(foot_names),
    }


class AMPRunner(OnPolicyRunner):
    """Hands the env's AMP definition (``amp_state_of``) to ``PPOAMP`` before it is built.

    Style reward, discriminator loss, gradient penalty and the discriminator's mean output on expert and policy
    pairs are logged every iteration (``AMP/style_reward`` and ``Loss/amp_*`` in TensorBoard and the console).
    """

    alg: PPOAMP

    def __init__(self, env, train_cfg: dict, *args, **kwargs) -> None:
        train_cfg["algorithm"]["amp_state"] = amp_state_of(env)
        super().__init__(env, train_cfg, *args, **kwargs)
