"""G1-class humanoid (29 joints) on flat ground and on the generated rough terrain, embedded MuJoCo backends: PPO,
AMP with the scripted walk (``robolab/amp/data/g1_walk.npz``), and a height-scan teacher distilled into a blind
student."""

from robolab.tasks.registry import register_task

FLAT = "robolab.tasks.velocity.g1.env_cfgs:G1FlatEnvCfg"
ROUGH = "robolab.tasks.velocity.g1.env_cfgs:G1RoughEnvCfg"

register_task(
    "RoboLab-Velocity-Flat-G1-v0",
    env_cfg_entry_point=FLAT,
    hydra_task="g1_flat",
    description="G1-class humanoid, flat ground, velocity tracking (embedded MuJoCo)",
    agents={"rsl_rl_amp_cfg_entry_point": "g1_flat_amp"},
)

register_task(
    "RoboLab-Velocity-Flat-G1-AMP-v0",
    env_cfg_entry_point=FLAT,
    hydra_task="g1_flat_amp",
    description="G1-class humanoid, flat ground: velocity tracking with an adversarial walking prior (AMP)",
)

register_task(
    "RoboLab-Velocity-Rough-G1-v0",
    env_cfg_entry_point=ROUGH,
    hydra_task="g1_rough",
    description="G1-class humanoid, generated rough terrain with a curriculum, perceptive (height scan)",
)

register_task(
    "RoboLab-Velocity-Rough-G1-Teacher-v0",
    env_cfg_entry_point=ROUGH,
    hydra_task="g1_rough_teacher",
    description="G1-class humanoid, rough terrain: PPO teacher on exact proprioception and height scan",
    agents={"rsl_rl_distillation_cfg_entry_point": "g1_rough_distillation"},
)

register_task(
    "RoboLab-Velocity-Rough-G1-Distillation-v0",
    env_cfg_entry_point="robolab.tasks.velocity.g1.env_cfgs:G1RoughBlindEnvCfg",
    hydra_task="g1_rough_distillation",
    description="G1-class humanoid, rough terrain: blind student distilled from a height-scan teacher",
)
