"""Typed agent configs: the rsl_rl runner dict's schema, with every default in one place.

rsl_rl takes its runner config as a plain dict with ``class_name`` entries. robolab keeps that dict as what is
handed over (``robolab.config.agent_dict``) but composes it through these dataclasses: Hydra checks every
``agent.*`` override's type against them, and ``__post_init__`` checks ranges before any work starts. The YAML
files under ``config/runner`` and ``config/algorithm`` only pick a schema and set what differs from it.

Model entries (``actor``, ``critic``, ``student``, ``teacher``) stay open dicts: their keys are the keyword
arguments of whatever rsl_rl model class ``class_name`` names (MLP, RNN, CNN), which checks them itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore

from robolab.files import check_dir_name
from robolab.matmul_precision import MATMUL_PRECISIONS


class AgentConfigError(ValueError):
    """An ``agent.*`` value out of range; the message names the key and what is allowed."""


def _require(key: str, value: Any, ok: bool, allowed: str) -> None:
    if not ok:
        raise AgentConfigError(f"agent.{key}={value!r}: {allowed}")


def _positive(key: str, value: float) -> None:
    what = "a learning rate" if key.endswith("learning_rate") else "it"
    _require(key, value, math.isfinite(value) and value > 0, f"{what} must be a finite number > 0")
    if key.endswith("learning_rate"):
        _require(key, value, value <= 1.0, "a learning rate must be at most 1")
    if key.endswith(("num_learning_epochs", "num_disc_updates")):
        _require(key, value, value <= MAX_PASSES, f"at most {MAX_PASSES} passes over an iteration's samples")


MAX_PASSES = 1000
"""The most epochs (or discriminator updates) an update may make: rsl_rl's defaults are 5 and 2; more would keep one
update running for hours (a stop request still ends it within seconds)."""


def _mlp(hidden_dims: list[int], init_std: float | None) -> dict[str, Any]:
    model: dict[str, Any] = {
        "class_name": "MLPModel",
        "hidden_dims": hidden_dims,
        "activation": "elu",
        "obs_normalization": True,
    }
    if init_std is not None:
        model["distribution_cfg"] = {"class_name": "GaussianDistribution", "init_std": init_std}
    return model


OPTIMIZERS = ("adam", "adamw", "sgd", "rmsprop")
"""rsl_rl's optimizer names."""


def _check_optimizer(name: str) -> None:
    _require("algorithm.optimizer", name, name in OPTIMIZERS, f"allowed: {', '.join(OPTIMIZERS)}")


def _check_dir_name(key: str, name: str, allow_empty: bool) -> None:
    """A name that becomes a directory under the log root (``robolab.files.check_dir_name``)."""
    try:
        check_dir_name(f"agent.{key}", name, allow_empty)
    except ValueError as err:
        raise AgentConfigError(str(err)) from None


def _check_model(key: str, model: dict[str, Any]) -> None:
    _require(f"{key}.class_name", model.get("class_name"), bool(model.get("class_name")), "must name a model class")
    dims = model.get("hidden_dims", [1])
    ok = isinstance(dims, (list, tuple)) and len(dims) > 0 and all(isinstance(d, int) and d > 0 for d in dims)
    _require(f"{key}.hidden_dims", dims, ok, "must be a non-empty list of positive integers")
    distribution = model.get("distribution_cfg")
    if isinstance(distribution, dict) and "init_std" in distribution:
        std = distribution["init_std"]
        number = isinstance(std, (int, float)) and math.isfinite(std)
        if key == "teacher":  # a teacher acts by its mean, its std comes from its checkpoint: Isaac Lab's configs say 0
            _require(f"{key}.distribution_cfg.init_std", std, number and std >= 0, "must be a finite number >= 0")
        else:  # a policy that samples from a zero-width Gaussian cannot act
            _require(f"{key}.distribution_cfg.init_std", std, number and std > 0, "must be a finite number > 0")


# --- algorithms ---------------------------------------------------------------------------------------------
@dataclass
class PpoCfg:
    """rsl_rl's PPO keyword arguments (robolab's ``PPO`` subclass)."""

    class_name: str = "robolab.algorithms:PPO"
    """The algorithm class, ``module:Class`` (rsl_rl's ``class_name``)."""
    learning_rate: float = 1.0e-3
    """Adam's step size; the adaptive schedule moves it from here."""
    num_learning_epochs: int = 5
    """Passes over an iteration's samples per update."""
    num_mini_batches: int = 4
    """Mini-batches per pass (of the rank's own samples; gradients are averaged across ranks)."""
    clip_param: float = 0.2
    """PPO's ratio clip epsilon (also the value clip when ``use_clipped_value_loss``)."""
    gamma: float = 0.99
    """Discount factor."""
    lam: float = 0.95
    """GAE's lambda."""
    value_loss_coef: float = 1.0
    """Weight of the value loss in the summed loss."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus."""
    max_grad_norm: float = 1.0
    """Gradients are clipped to this global norm (after the all-reduce, so every rank clips alike)."""
    schedule: str = "adaptive"
    """``adaptive`` (the learning rate follows the KL against ``desired_kl``) or ``fixed``."""
    desired_kl: float = 0.01
    """The KL divergence per update the adaptive schedule aims at."""
    use_clipped_value_loss: bool = True
    """Clip the value function's change per update as PPO clips the policy's."""
    normalize_advantage_per_mini_batch: bool = False
    """Normalise advantages per mini-batch (True) or once per iteration."""
    optimizer: str = "adam"
    """One of ``OPTIMIZERS``."""
    use_mixed_precision: bool = False
    """bfloat16 autocast in the update (rsl_rl's option)."""
    share_cnn_encoders: bool = False
    """Actor and critic share their CNN encoders (rsl_rl's option, for image observations)."""
    rnd_cfg: Any = None
    """Random network distillation (rsl_rl's dict); None: off."""
    symmetry_cfg: Any = None
    """Symmetry augmentation or mirror loss (rsl_rl's dict; the tasks' mirror functions: docs/sim2real.md); None:
    off."""
    critic_warmup_updates: int = 0
    """The first this many updates train the critic alone: the actor, its noise and the learning rate are held. A run
    whose policy comes from a checkpoint (``init_policy``) and whose critic starts fresh uses it, so the loaded policy
    is not pushed around by the advantages of a critic that has not yet learned its returns."""
    cuda_graph: bool = True
    """On a GPU, replay the update's minibatch step as one CUDA graph (captured at the second update) instead of
    launching its few hundred kernels one by one: the same arithmetic (``tests/test_ppo_update.py``), and at 4096 envs
    on an H200 the update takes 23-25 ms instead of 110-140 (docs/performance.md); and the policy's inference in the
    rollout as another (captured at the first step), drawing the eager call's bits (``tests/test_captured_act.py``). It
    applies to feed-forward models on one rank without symmetry, RND or mixed precision; the eager calls run otherwise
    (and on the CPU). A capture that fails stops training with a one-line error naming
    ``agent.algorithm.cuda_graph=false``, before any change."""

    def __post_init__(self) -> None:
        for key in (
            "learning_rate",
            "num_learning_epochs",
            "num_mini_batches",
            "clip_param",
            "max_grad_norm",
            "desired_kl",
        ):
            _positive(f"algorithm.{key}", getattr(self, key))
        for key in ("gamma", "lam"):
            value = getattr(self, key)
            _require(f"algorithm.{key}", value, 0 <= value <= 1, "must be in [0, 1]")  # (NaN is not)
        warmup = self.critic_warmup_updates
        _require("algorithm.critic_warmup_updates", warmup, warmup >= 0, "must be an integer >= 0")
        _require("algorithm.value_loss_coef", self.value_loss_coef, self.value_loss_coef >= 0, "must be >= 0")
        _require(
            "algorithm.schedule", self.schedule, self.schedule in ("adaptive", "fixed"), "allowed: adaptive, fixed"
        )
        _check_optimizer(self.optimizer)


@dataclass
class AmpCfg:
    """The adversarial motion prior: reference clips, discriminator and how style and task rewards mix."""

    motion_files: list[str] = field(default_factory=lambda: ["go2_trot.npz"])
    """Paths, or clips shipped in ``robolab/amp/data``."""
    loss_type: str = "lsgan"
    """``lsgan`` (least squares + gradient penalty, Peng et al. 2021) or ``bce``."""
    hidden_dims: list[int] = field(default_factory=lambda: [1024, 512])
    """The discriminator's hidden layers."""
    activation: str = "relu"
    """The discriminator's activation (a ``torch.nn`` name in lower case)."""
    learning_rate: float = 1.0e-4
    """The discriminator's Adam step size."""
    weight_decay: float = 1.0e-4
    """The discriminator's weight decay (its output layer's, as in the AMP paper)."""
    grad_penalty_coef: float = 5.0
    """Weight of the gradient penalty on the reference transitions."""
    num_disc_updates: int = 8
    """Discriminator mini-batch updates per iteration (their gradients averaged across ranks)."""
    batch_size: int = 4096
    """Transitions per discriminator mini-batch, of the policy's and of the clips' each."""
    replay_size: int = 100_000
    """The policy transitions kept for the discriminator (a ring buffer per rank)."""
    max_grad_norm: float = 1.0
    """The discriminator's gradient clip (global norm)."""
    task_reward_weight: float = 1.0
    """The task reward's share of the mixed reward; the style reward has the rest."""
    style_reward_weight: float = 1.0
    """The style reward is in [0, 1] per step and scaled by the control dt, like the task's terms."""

    def __post_init__(self) -> None:
        key = "algorithm.amp_cfg"
        _require(f"{key}.motion_files", self.motion_files, len(self.motion_files) > 0, "name at least one clip")
        _require(f"{key}.loss_type", self.loss_type, self.loss_type in ("lsgan", "bce"), "allowed: lsgan, bce")
        for name in ("learning_rate", "num_disc_updates", "batch_size", "replay_size", "max_grad_norm"):
            _positive(f"{key}.{name}", getattr(self, name))
        for name in ("weight_decay", "grad_penalty_coef", "task_reward_weight", "style_reward_weight"):
            value = getattr(self, name)
            _require(f"{key}.{name}", value, value >= 0, "must be >= 0")


@dataclass
class PpoAmpCfg(PpoCfg):
    """PPO's settings and the adversarial motion prior's."""

    class_name: str = "robolab.algorithms:PPOAMP"
    """The algorithm class: robolab's PPO with an adversarial motion prior."""
    amp_cfg: AmpCfg = field(default_factory=AmpCfg)
    """The motion prior: clips, discriminator and reward mix."""


@dataclass
class DistillationCfg:
    """rsl_rl's Distillation keyword arguments (robolab's ``Distillation`` subclass)."""

    class_name: str = "robolab.algorithms:Distillation"
    """The algorithm class: robolab's distillation (student acts, teacher labels)."""
    num_learning_epochs: int = 2
    """Passes over an iteration's samples per update."""
    gradient_length: int = 12
    """Steps of a recurrent student's rollout between gradient steps (truncated backpropagation)."""
    learning_rate: float = 1.0e-3
    """The student's step size."""
    max_grad_norm: float | None = 1.0
    """The student's gradient clip (global norm); None: no clip."""
    loss_type: str = "mse"
    """The behaviour loss between student and teacher actions: ``mse`` or ``huber``."""
    optimizer: str = "adam"
    """One of ``OPTIMIZERS``."""

    def __post_init__(self) -> None:
        for key in ("num_learning_epochs", "gradient_length", "learning_rate"):
            _positive(f"algorithm.{key}", getattr(self, key))
        _require("algorithm.loss_type", self.loss_type, self.loss_type in ("mse", "huber"), "allowed: mse, huber")
        _check_optimizer(self.optimizer)


# --- runners ------------------------------------------------------------------------------------------------
@dataclass
class RunnerCfg:
    """What every runner reads; ``algorithm`` is filled by the ``algorithm`` config group with its own schema."""

    runner_class_name: str = "robolab.runners:OnPolicyRunner"
    """The runner class, ``module:Class``."""
    num_steps_per_env: int = 24
    """Steps each env takes per iteration (the rollout's length)."""
    max_iterations: int = 1500
    """The final iteration count: a resumed run trains until it reaches it."""
    save_interval: int = 50
    """A checkpoint every this many iterations (and one at the end)."""
    experiment_name: str = "robolab"
    """The log folder under the log root (``logs/<experiment_name>/<date>_<run_name>``)."""
    run_name: str = ""
    """Appended to the run folder's date; empty: the date alone."""
    logger: Any = "tensorboard"
    """``tensorboard``, or rsl_rl's writer dict (``{class_name: WandbLogWriter, project_name: ...}``)."""
    check_for_nan: bool = True
    """Stop with the name of the first observation or output holding NaN (costs a sync per step)."""
    init_at_random_ep_len: bool = True
    """A new run starts every env at a random point of its first episode (spreads the episode ends)."""
    clip_actions: float | None = None
    """Isaac Lab tasks: the wrapper clips actions to [-clip_actions, clip_actions] (rsl_rl's wrapper option)."""
    torch_compile_mode: str | None = None
    """rsl_rl's ``torch.compile`` mode for the models (``default``, ``max-autotune-no-cudagraphs``); None: eager."""
    matmul_precision: str = "tf32"
    """The models' float32 matmuls on a GPU, in policy inference and the updates: ``tf32`` (tensor cores, where the
    GPU has them) or ``ieee`` (PyTorch's default). The env's own arithmetic, ``play.py`` and the CPU are IEEE float32
    either way (``robolab.matmul_precision``). On an H200 TF32 shortened the PPO update from 204 to 148 ms at 65536
    envs and from 26 to 22 ms at 4096 (docs/performance.md)."""
    obs_groups: dict[str, list[str]] = field(default_factory=dict)
    """Which env observation groups each model reads (rsl_rl's ``obs_groups``)."""
    algorithm: Any = None
    """The algorithm and its settings."""
    actor: dict[str, Any] = field(default_factory=lambda: _mlp([512, 256, 128], init_std=1.0))
    """PPO's policy. Every runner accepts it, so a task states its network sizes once whichever runner trains it
    (a distillation run ignores ``actor`` and ``critic``)."""
    critic: dict[str, Any] = field(default_factory=lambda: _mlp([512, 256, 128], init_std=None))
    """The critic model (an rsl_rl model dict with ``class_name``)."""

    def __post_init__(self) -> None:
        for key in ("num_steps_per_env", "max_iterations", "save_interval"):
            _require(key, getattr(self, key), getattr(self, key) >= 1, "must be an integer >= 1")
        for key, allow_empty in (("experiment_name", False), ("run_name", True)):
            _check_dir_name(key, getattr(self, key), allow_empty)
        clip = self.clip_actions
        _require(
            "clip_actions", clip, clip is None or (math.isfinite(clip) and clip > 0), "must be None or a number > 0"
        )
        precision = self.matmul_precision
        _require(
            "matmul_precision", precision, precision in MATMUL_PRECISIONS, f"allowed: {', '.join(MATMUL_PRECISIONS)}"
        )
        modes = (None, "default", "max-autotune-no-cudagraphs")
        _require("torch_compile_mode", self.torch_compile_mode, self.torch_compile_mode in modes, f"allowed: {modes}")
        _check_model("actor", self.actor)
        _check_model("critic", self.critic)


@dataclass
class OnPolicyRunnerCfg(RunnerCfg):
    """The PPO (and AMP) runner: the actor reads the ``policy`` group, the critic the ``critic`` group."""

    obs_groups: dict[str, list[str]] = field(default_factory=lambda: {"actor": ["policy"], "critic": ["critic"]})
    """The actor reads ``policy``, the critic ``critic`` (privileged, noise-free)."""
    init_policy: str | None = None
    """A checkpoint whose policy this run starts from (``--init_policy``): a distillation run's student or a PPO
    run's actor, of the same architecture as ``actor``. The critic, the optimiser and the iteration count start
    fresh; the env's curriculum continues from the checkpoint's levels. None: the newest checkpoint of
    ``init_policy_experiment``, or a policy trained from scratch when that is empty too."""
    init_policy_experiment: str = ""
    """The experiment whose newest checkpoint starts the policy when ``init_policy`` is not given (e.g. the
    distillation run a blind student is fine-tuned from)."""
    init_policy_std: float | None = None
    """The action noise (standard deviation of every action) a loaded policy starts with; None: the checkpoint's. A
    distilled student's is its initial width, since distillation trains the mean alone."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_dir_name("init_policy_experiment", self.init_policy_experiment, allow_empty=True)
        std = self.init_policy_std
        ok = std is None or (isinstance(std, (int, float)) and math.isfinite(std) and std > 0)
        _require("init_policy_std", std, ok, "must be None or a finite number > 0")


@dataclass
class DistillationRunnerCfg(RunnerCfg):
    """The distillation runner: a student imitating a trained teacher."""

    runner_class_name: str = "robolab.runners:DistillationRunner"
    """The runner class: robolab's distillation runner."""
    max_iterations: int = 300
    """Iterations of distillation when ``--max_iterations`` is not given."""
    obs_groups: dict[str, list[str]] = field(default_factory=lambda: {"student": ["policy"], "teacher": ["teacher"]})
    """The student reads ``policy``, the teacher ``teacher`` (the groups its task declares)."""
    student: dict[str, Any] = field(default_factory=lambda: _mlp([256, 128, 64], init_std=0.1))
    """The student model (an rsl_rl model dict; recurrent for a blind student)."""
    teacher: dict[str, Any] = field(default_factory=lambda: _mlp([128, 128, 128], init_std=1.0))
    """Must match the architecture of the teacher's PPO actor."""
    teacher_checkpoint: str | None = None
    """A PPO checkpoint whose actor reads the ``teacher`` group (``--teacher_checkpoint``); None: the newest
    checkpoint of ``teacher_experiment`` under the log root."""
    teacher_experiment: str = ""
    """The experiment whose newest checkpoint is the teacher when ``--teacher_checkpoint`` is not given."""

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_dir_name("teacher_experiment", self.teacher_experiment, allow_empty=True)
        _check_model("student", self.student)
        _check_model("teacher", self.teacher)


# Schemas by config group: the YAML option of the same group names one in its defaults list.
SCHEMAS = {
    ("runner", "on_policy_schema", "agent"): OnPolicyRunnerCfg,
    ("runner", "distillation_schema", "agent"): DistillationRunnerCfg,
    ("algorithm", "ppo_schema", "agent.algorithm"): PpoCfg,
    ("algorithm", "ppo_amp_schema", "agent.algorithm"): PpoAmpCfg,
    ("algorithm", "distillation_schema", "agent.algorithm"): DistillationCfg,
}


def register_schemas() -> None:
    """Put the schemas in Hydra's ConfigStore (idempotent; needed before composing ``train.yaml``)."""
    store = ConfigStore.instance()
    for (group, name, package), node in SCHEMAS.items():
        store.store(group=group, name=name, node=node, package=package)
