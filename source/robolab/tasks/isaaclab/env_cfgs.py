"""Isaac Lab's velocity env configs with robolab's observation groups added.

Isaac Lab's velocity tasks have one ``policy`` group (noisy). robolab adds:

- ``critic`` and ``teacher``: the same terms without noise (the critic of PPO, the teacher of distillation);
- ``amp`` (Go2 only, the robot robolab ships motion clips for): joint positions and velocities, base linear
  and angular velocity and foot positions in the base frame, joints and feet in the order of robolab's
  ``RobotCfg`` so the clips line up (``AMP_TERMS`` order, as the embedded env builds it).

Each class subclasses Isaac Lab's own, so rewards, terrains, events and physics are Isaac Lab's.
"""

from __future__ import annotations

import copy

from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils import configclass
from isaaclab_tasks.core.velocity import mdp as il_mdp
from isaaclab_tasks.core.velocity.config.anymal_d.flat_env_cfg import AnymalDFlatEnvCfg as _AnymalDFlat
from isaaclab_tasks.core.velocity.config.anymal_d.rough_env_cfg import AnymalDRoughEnvCfg as _AnymalDRough
from isaaclab_tasks.core.velocity.config.g1.flat_env_cfg import G1FlatEnvCfg as _G1Flat
from isaaclab_tasks.core.velocity.config.g1.rough_env_cfg import G1RoughEnvCfg as _G1Rough
from isaaclab_tasks.core.velocity.config.go2.flat_env_cfg import UnitreeGo2FlatEnvCfg as _Go2Flat
from isaaclab_tasks.core.velocity.config.go2.rough_env_cfg import UnitreeGo2RoughEnvCfg as _Go2Rough

from robolab.amp.features import AMP_TERMS
from robolab.assets.robot_cfg import RobotCfg
from robolab.tasks.isaaclab.mdp import body_pos_b
from robolab.tasks.velocity.go2.env_cfgs import go2_robot_cfg


def add_privileged_groups(cfg) -> None:
    """``critic`` and ``teacher``: the policy group's terms, noise-free."""
    for name in ("critic", "teacher"):
        group = copy.deepcopy(cfg.observations.policy)
        group.enable_corruption = False
        setattr(cfg.observations, name, group)


@configclass
class AmpObsCfg(ObsGroup):
    """The AMP state of the Go2 (see ``robolab.amp.features``)."""

    def __post_init__(self):
        self.enable_corruption = False
        self.concatenate_terms = True


def add_amp_group(cfg, robot: RobotCfg) -> None:
    """Add an ``amp`` observation group of ``robot``'s AMP state to an Isaac Lab env config."""
    joints = SceneEntityCfg("robot", joint_names=list(robot.joint_names), preserve_order=True)
    feet = SceneEntityCfg("robot", body_names=list(robot.foot_bodies), preserve_order=True)
    group = AmpObsCfg()
    group.joint_pos = ObsTerm(func=il_mdp.joint_pos, params={"asset_cfg": joints})
    group.joint_vel = ObsTerm(func=il_mdp.joint_vel, params={"asset_cfg": joints})
    group.base_lin_vel = ObsTerm(func=il_mdp.base_lin_vel)
    group.base_ang_vel = ObsTerm(func=il_mdp.base_ang_vel)
    group.foot_pos = ObsTerm(func=body_pos_b, params={"asset_cfg": feet})
    cfg.observations.amp = group
    # What robolab's AMPRunner reads from env.cfg (the embedded env's names for the same things).
    cfg.amp_terms = list(AMP_TERMS)
    cfg.amp_joint_names = list(robot.joint_names)
    cfg.amp_foot_names = list(robot.foot_bodies)


@configclass
class Go2FlatEnvCfg(_Go2Flat):
    """Isaac Lab's flat Go2 env with robolab's privileged groups and an AMP group."""

    def __post_init__(self):
        super().__post_init__()
        add_privileged_groups(self)
        add_amp_group(self, go2_robot_cfg())


@configclass
class Go2RoughEnvCfg(_Go2Rough):
    """Isaac Lab's rough Go2 env with robolab's privileged groups and an AMP group."""

    def __post_init__(self):
        super().__post_init__()
        add_privileged_groups(self)
        add_amp_group(self, go2_robot_cfg())


@configclass
class AnymalDFlatEnvCfg(_AnymalDFlat):
    """Isaac Lab's flat ANYmal-D env with robolab's privileged groups."""

    def __post_init__(self):
        super().__post_init__()
        add_privileged_groups(self)


@configclass
class AnymalDRoughEnvCfg(_AnymalDRough):
    """Isaac Lab's rough ANYmal-D env with robolab's privileged groups."""

    def __post_init__(self):
        super().__post_init__()
        add_privileged_groups(self)


@configclass
class G1FlatEnvCfg(_G1Flat):
    """Isaac Lab's flat G1 env with robolab's privileged groups."""

    def __post_init__(self):
        super().__post_init__()
        add_privileged_groups(self)


@configclass
class G1RoughEnvCfg(_G1Rough):
    """Isaac Lab's rough G1 env with robolab's privileged groups."""

    def __post_init__(self):
        super().__post_init__()
        add_privileged_groups(self)
