"""The rsl_rl agents of robolab's ``RoboLab-Isaac-*`` tasks, as Isaac Lab config classes.

One source of truth: these classes are the tasks' ``rsl_rl_cfg_entry_point``. ``isaaclab train`` hands them to
rsl_rl as they are, and robolab's ``train.py`` trains their translation (``agent_cfg.translate``); a test keeps
the two equal. Each is Isaac Lab's agent for the same robot and terrain with robolab's two changes:

- the critic reads the noise-free ``critic`` group the env configs add (``env_cfgs.add_privileged_groups``);
- actor and critic normalise their observations (running mean and variance, synchronised across ranks).
"""

from __future__ import annotations

from isaaclab.utils import configclass
from isaaclab_tasks.core.velocity.config.anymal_d.agents.rsl_rl_ppo_cfg import (
    AnymalDFlatPPORunnerCfg as _AnymalDFlat,
)
from isaaclab_tasks.core.velocity.config.anymal_d.agents.rsl_rl_ppo_cfg import (
    AnymalDRoughPPORunnerCfg as _AnymalDRough,
)
from isaaclab_tasks.core.velocity.config.g1.agents.rsl_rl_ppo_cfg import G1FlatPPORunnerCfg as _G1Flat
from isaaclab_tasks.core.velocity.config.g1.agents.rsl_rl_ppo_cfg import G1RoughPPORunnerCfg as _G1Rough
from isaaclab_tasks.core.velocity.config.go2.agents.rsl_rl_ppo_cfg import UnitreeGo2FlatPPORunnerCfg as _Go2Flat
from isaaclab_tasks.core.velocity.config.go2.agents.rsl_rl_ppo_cfg import UnitreeGo2RoughPPORunnerCfg as _Go2Rough


def use_robolab_defaults(cfg, experiment_name: str) -> None:
    """Isaac Lab's runner config with robolab's experiment name, observation groups and normalisers."""
    cfg.experiment_name = experiment_name
    cfg.obs_groups = {"actor": ["policy"], "critic": ["critic"]}
    cfg.actor.obs_normalization = True
    cfg.critic.obs_normalization = True


@configclass
class Go2FlatPPORunnerCfg(_Go2Flat):
    """Isaac Lab's flat Go2 agent with robolab's defaults."""

    def __post_init__(self):
        super().__post_init__()
        use_robolab_defaults(self, "isaac_go2_flat")


@configclass
class Go2RoughPPORunnerCfg(_Go2Rough):
    """Isaac Lab's rough Go2 agent with robolab's defaults."""

    def __post_init__(self):
        super().__post_init__()
        use_robolab_defaults(self, "isaac_go2_rough")


@configclass
class AnymalDFlatPPORunnerCfg(_AnymalDFlat):
    """Isaac Lab's flat ANYmal-D agent with robolab's defaults."""

    def __post_init__(self):
        super().__post_init__()
        use_robolab_defaults(self, "isaac_anymal_d_flat")


@configclass
class AnymalDRoughPPORunnerCfg(_AnymalDRough):
    """Isaac Lab's rough ANYmal-D agent with robolab's defaults."""

    def __post_init__(self):
        super().__post_init__()
        use_robolab_defaults(self, "isaac_anymal_d_rough")


@configclass
class G1FlatPPORunnerCfg(_G1Flat):
    """Isaac Lab's flat G1 agent with robolab's defaults."""

    def __post_init__(self):
        super().__post_init__()
        use_robolab_defaults(self, "isaac_g1_flat")


@configclass
class G1RoughPPORunnerCfg(_G1Rough):
    """Isaac Lab's rough G1 agent with robolab's defaults."""

    def __post_init__(self):
        super().__post_init__()
        use_robolab_defaults(self, "isaac_g1_rough")
