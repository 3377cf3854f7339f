"""The velocity MDP's term functions, by kind; a term's ``func`` may name any of them by its bare name.

``kernels`` holds the pure tensor functions they call. A user's own term is any function of the same shape in
any importable module (``func: mypkg.terms:bonus``): see ``robolab.envs.terms``.
"""

from robolab.envs.mdp import kernels
from robolab.envs.mdp.commands import UniformVelocityCommand
from robolab.envs.mdp.curricula import terrain_levels
from robolab.envs.mdp.events import (
    push_by_setting_velocity,
    randomize_base_mass,
    randomize_friction,
    reset_robot_state,
)
from robolab.envs.mdp.observations import (
    amp_state,
    base_ang_vel,
    base_lin_vel,
    foot_contact,
    generated_commands,
    height_scan,
    joint_pos_rel,
    joint_vel,
    last_action,
    physics_param,
    projected_gravity,
)
from robolab.envs.mdp.randomization import (
    randomize_actuators,
    randomize_base_com,
    randomize_joint_dynamics,
    randomize_link_masses,
)
from robolab.envs.mdp.rewards import (
    action_rate_l2,
    ang_vel_xy_l2,
    base_height_l2,
    feet_air_time,
    feet_air_time_biped,
    feet_slide,
    feet_stumble,
    flat_orientation_l2,
    is_terminated,
    joint_acc_l2,
    joint_deviation_l1,
    joint_pos_limits,
    joint_torques_l2,
    lin_vel_z_l2,
    track_ang_vel_z_exp,
    track_lin_vel_xy_exp,
    undesired_contacts,
)
from robolab.envs.mdp.terminations import (
    base_height_below,
    illegal_contact,
    terrain_out_of_bounds,
    terrain_tile_crossed,
    time_out,
)

__all__ = [
    "UniformVelocityCommand",
    "action_rate_l2",
    "amp_state",
    "ang_vel_xy_l2",
    "base_ang_vel",
    "base_height_below",
    "base_height_l2",
    "base_lin_vel",
    "feet_air_time",
    "feet_air_time_biped",
    "feet_slide",
    "feet_stumble",
    "flat_orientation_l2",
    "foot_contact",
    "generated_commands",
    "height_scan",
    "illegal_contact",
    "is_terminated",
    "joint_acc_l2",
    "joint_deviation_l1",
    "joint_pos_limits",
    "joint_pos_rel",
    "joint_torques_l2",
    "joint_vel",
    "kernels",
    "last_action",
    "lin_vel_z_l2",
    "physics_param",
    "projected_gravity",
    "push_by_setting_velocity",
    "randomize_actuators",
    "randomize_base_com",
    "randomize_base_mass",
    "randomize_friction",
    "randomize_joint_dynamics",
    "randomize_link_masses",
    "reset_robot_state",
    "terrain_levels",
    "terrain_out_of_bounds",
    "terrain_tile_crossed",
    "time_out",
    "track_ang_vel_z_exp",
    "track_lin_vel_xy_exp",
    "undesired_contacts",
]
