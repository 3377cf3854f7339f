"""Go2-class quadruped on flat ground, simulated by the embedded MuJoCo backend."""

from robolab.tasks.registry import register_task

register_task(
    "RoboLab-Velocity-Flat-Go2-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2FlatEnvCfg",
    hydra_task="go2_flat",
    description="Go2-class quadruped, flat ground, velocity tracking (embedded MuJoCo, CPU)",
    agents={"rsl_rl_amp_cfg_entry_point": "go2_flat_amp"},
)

register_task(
    "RoboLab-Velocity-Flat-Go2-Realism-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2FlatRealismEnvCfg",
    hydra_task="go2_flat_realism",
    description="Go2-class quadruped, flat ground, trained for a real robot: motor, joint, mass, friction and "
    "latency randomisation (docs/sim2real.md)",
)

register_task(
    "RoboLab-Velocity-Flat-Go2-Teacher-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2FlatEnvCfg",
    hydra_task="go2_flat_teacher",
    description="Go2-class quadruped, flat ground: PPO teacher on privileged observations (for distillation)",
    agents={"rsl_rl_distillation_cfg_entry_point": "go2_flat_distillation"},
)

register_task(
    "RoboLab-Velocity-Flat-Go2-Distillation-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2FlatEnvCfg",
    hydra_task="go2_flat_distillation",
    description="Go2-class quadruped, flat ground: proprioceptive student distilled from the teacher task",
)

register_task(
    "RoboLab-Velocity-Flat-Go2-AMP-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2FlatEnvCfg",
    hydra_task="go2_flat_amp",
    description="Go2-class quadruped, flat ground: velocity tracking with an adversarial trot prior (AMP)",
)

register_task(
    "RoboLab-Velocity-Rough-Go2-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2RoughEnvCfg",
    hydra_task="go2_rough",
    description="Go2-class quadruped, generated rough terrain with a curriculum, perceptive (height scan)",
    agents={"rsl_rl_amp_cfg_entry_point": "go2_rough_amp"},
)

register_task(
    "RoboLab-Velocity-Rough-Go2-Blind-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2RoughBlindEnvCfg",
    hydra_task="go2_rough_blind",
    description="Go2-class quadruped, generated rough terrain: proprioceptive policy (the critic sees the scan)",
)

register_task(
    "RoboLab-Velocity-Rough-Go2-Teacher-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2RoughEnvCfg",
    hydra_task="go2_rough_teacher",
    description="Go2-class quadruped, rough terrain: PPO teacher on exact proprioception and height scan",
    agents={"rsl_rl_distillation_cfg_entry_point": "go2_rough_distillation"},
)

register_task(
    "RoboLab-Velocity-Rough-Go2-Distillation-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2RoughBlindEnvCfg",
    hydra_task="go2_rough_distillation",
    description="Go2-class quadruped, rough terrain: blind student distilled from a height-scan teacher",
)

register_task(
    "RoboLab-Velocity-Rough-Go2-Blind-Finetune-v0",
    env_cfg_entry_point="robolab.tasks.velocity.go2.env_cfgs:Go2RoughBlindEnvCfg",
    hydra_task="go2_rough_blind_finetune",
    description="Go2-class quadruped, rough terrain: the distilled blind student trained on by PPO (its critic sees "
    "the scan)",
)
