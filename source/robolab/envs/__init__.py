"""The velocity MDP: declared terms (``terms``, ``mdp``) run by ``VelocityEnv`` over a physics backend.

``VelocityEnv`` is imported on first use, so reading the configs (``velocity_env_cfg``) imports no simulator.
"""

from robolab.envs.velocity_env_cfg import VelocityEnvCfg

__all__ = ["VelocityEnv", "VelocityEnvCfg"]


def __getattr__(name: str):
    if name == "VelocityEnv":
        from robolab.envs.velocity_env import VelocityEnv

        return VelocityEnv
    raise AttributeError(f"module 'robolab.envs' has no attribute {name!r}")
