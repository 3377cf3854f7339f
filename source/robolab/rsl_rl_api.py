"""Where robolab meets rsl_rl: every rsl_rl name robolab uses is imported here, and nowhere else.

robolab subclasses rsl_rl's runner, algorithms and logger and calls a few of its utilities, all through their
public API: constructors, public methods and the attributes rsl_rl documents. Where robolab needs a method to
behave differently it overrides the method whole (``OnPolicyRunner.__init__`` and ``learn``, ``PPO.update`` and
``Distillation.update``, the logger's ``process_env_step``), never by reaching into rsl_rl's private state.

``SURFACE`` lists each name robolab relies on with the parameters robolab passes, overrides or reads;
``surface_mismatches()`` compares it with the installed rsl-rl-lib, and ``tests/test_rsl_rl_api.py`` fails
with a message naming the change when an upgrade breaks any of it.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import types


class DeferredModule(types.ModuleType):
    """A package imported but not yet executed: its first attribute that is not already set (not ``__file__``,
    ``__spec__``, ``__path__``, which the import system set) executes it, and it becomes the plain module it is."""

    def __getattr__(self, attribute: str):
        self.__class__ = types.ModuleType
        self.__spec__.loader.exec_module(self)
        return getattr(self, attribute)


def defer_import(name: str) -> None:
    """Import the installed package ``name`` as a ``DeferredModule``, executed on its first use.

    rsl_rl's ``rsl_rl.utils`` imports the wandb and neptune packages whenever they are installed, though a run logs to
    at most one of them; executing them costs every process (training, play, evaluation) 1-3 s at start-up. The
    standard library's ``importlib.util.LazyLoader`` does not help here: importing torch's compiler calls
    ``inspect.getmodule``, which reads every module's ``__file__``, and that read executes a lazy module. A package
    that is missing, or already imported, is left as it is."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = DeferredModule
    sys.modules[name] = module


for _logger_package in ("wandb", "neptune"):  # before rsl_rl imports them
    defer_import(_logger_package)

import rsl_rl  # noqa: E402
from rsl_rl.algorithms import PPO, Distillation  # noqa: E402
from rsl_rl.env import VecEnv  # noqa: E402
from rsl_rl.models import MLPModel  # noqa: E402
from rsl_rl.modules import MLP, EmpiricalNormalization, GaussianDistribution  # noqa: E402
from rsl_rl.runners import OnPolicyRunner  # noqa: E402
from rsl_rl.storage import RolloutStorage  # noqa: E402
from rsl_rl.utils import reduce_gradients_in_buckets, resolve_callable, resolve_obs_groups, unpad_trajectories  # noqa: E402
from rsl_rl.utils.log_writer import LogWriter  # noqa: E402
from rsl_rl.utils.logger import Logger  # noqa: E402

__all__ = [
    "DISTILLATION_ATTRIBUTES",
    "MLP",
    "PPO",
    "PPO_ATTRIBUTES",
    "SURFACE",
    "DeferredModule",
    "Distillation",
    "EmpiricalNormalization",
    "GaussianDistribution",
    "LogWriter",
    "Logger",
    "MLPModel",
    "OnPolicyRunner",
    "RolloutStorage",
    "VecEnv",
    "defer_import",
    "reduce_gradients_in_buckets",
    "resolve_callable",
    "resolve_obs_groups",
    "rsl_rl_version",
    "surface_mismatches",
    "unpad_trajectories",
]

# name -> parameters (in order) that robolab passes, overrides or calls with. A leading "self" is implied
# for methods and left out.
SURFACE: dict[str, tuple[str, ...]] = {
    # runner: robolab overrides __init__, learn, save and load whole and inherits these
    "OnPolicyRunner.get_inference_policy": ("device",),
    "OnPolicyRunner.export_policy_to_jit": ("path", "filename"),
    "OnPolicyRunner.export_policy_to_onnx": ("path", "filename", "verbose"),
    "OnPolicyRunner.add_git_repo_to_log": ("repo_file_path",),
    # algorithms: constructed by rsl_rl's factory, extended by robolab's subclasses
    "PPO.construct_algorithm": ("obs", "env", "cfg", "device"),
    "PPO.act": ("obs",),
    "PPO.process_env_step": ("obs", "rewards", "dones", "extras"),
    "PPO.compute_returns": ("obs",),
    "PPO.update": (),
    "PPO.save": (),
    "PPO.load": ("loaded_dict", "load_cfg", "strict"),
    "PPO.get_policy": (),
    "PPO.train_mode": (),
    "PPO.eval_mode": (),
    "PPO.broadcast_parameters": (),
    "PPO.reduce_parameters": (),
    "Distillation.construct_algorithm": ("obs", "env", "cfg", "device"),
    "Distillation.update": (),
    "Distillation.load": ("loaded_dict", "load_cfg", "strict"),
    "Distillation.broadcast_parameters": (),
    "Distillation.reduce_parameters": (),
    # what robolab's PPO.update and Distillation.update (overridden whole) call on the storage and the models
    "RolloutStorage.mini_batch_generator": ("num_mini_batches", "num_epochs"),
    "RolloutStorage.recurrent_mini_batch_generator": ("num_mini_batches", "num_epochs"),
    "RolloutStorage.generator": (),
    "MLPModel.get_latent": ("obs", "masks", "hidden_state"),
    "GaussianDistribution.update": ("mlp_output",),
    "unpad_trajectories": ("trajectories", "masks"),
    "MLPModel.get_output_log_prob": ("outputs",),
    "MLPModel.get_kl_divergence": ("old_params", "new_params"),
    "MLPModel.update_normalization": ("obs",),
    "MLPModel.reset": ("dones", "hidden_state"),
    "MLPModel.detach_hidden_state": ("dones",),
    "MLPModel.get_hidden_state": (),
    # logger: robolab's subclass keeps the writer set-up and replaces the bookkeeping
    "Logger.__init__": (
        "log_dir",
        "cfg",
        "env_cfg",
        "num_envs",
        "is_distributed",
        "gpu_world_size",
        "gpu_global_rank",
        "device",
    ),
    "Logger.init_logging_writer": (),
    "Logger.process_env_step": ("rewards", "dones", "extras", "intrinsic_rewards"),
    "Logger.save_model": ("path", "it"),
    "Logger.stop_logging_writer": (),
    "LogWriter.save_video": ("video", "it"),
    # utilities and modules
    "reduce_gradients_in_buckets": ("params", "world_size", "bucket_mb"),
    "resolve_callable": ("callable_or_name",),
    "resolve_obs_groups": ("obs", "obs_groups", "default_sets"),
    "MLP.__init__": ("input_dim", "output_dim", "hidden_dims", "activation"),
    "EmpiricalNormalization.__init__": ("shape",),
    "EmpiricalNormalization.update": ("x",),
}

# Keyword arguments of the algorithm constructors that robolab's subclasses take by name.
CONSTRUCTOR_KEYWORDS: dict[str, tuple[str, ...]] = {
    "PPO.__init__": ("actor", "critic", "storage", "device", "multi_gpu_cfg", "grad_reduce_bucket_mb"),
    "Distillation.__init__": ("student", "teacher", "storage", "device", "multi_gpu_cfg", "grad_reduce_bucket_mb"),
}

# Attributes of a constructed PPO that robolab's subclasses read (public in rsl_rl: no leading underscore); most are
# the settings robolab's update (overridden whole) reads where rsl_rl's did.
PPO_ATTRIBUTES = (
    "storage",
    "optimizer",
    "rnd",
    "symmetry",
    "actor",
    "critic",
    "is_multi_gpu",
    "gpu_world_size",
    "normalize_advantage_per_mini_batch",
    "learning_rate",
    "device",
    "transition",
    "clip_param",
    "num_learning_epochs",
    "num_mini_batches",
    "value_loss_coef",
    "entropy_coef",
    "max_grad_norm",
    "use_clipped_value_loss",
    "desired_kl",
    "schedule",
    "use_mixed_precision",
)

# The same for Distillation, whose update robolab overrides whole too.
DISTILLATION_ATTRIBUTES = (
    "student",
    "teacher",
    "storage",
    "optimizer",
    "device",
    "is_multi_gpu",
    "num_updates",
    "num_learning_epochs",
    "gradient_length",
    "max_grad_norm",
    "loss_fn",
    "last_hidden_states",
    "use_mixed_precision",
)

_NAMES = {
    "OnPolicyRunner": OnPolicyRunner,
    "PPO": PPO,
    "Distillation": Distillation,
    "RolloutStorage": RolloutStorage,
    "MLPModel": MLPModel,
    "GaussianDistribution": GaussianDistribution,
    "Logger": Logger,
    "LogWriter": LogWriter,
    "MLP": MLP,
    "EmpiricalNormalization": EmpiricalNormalization,
    "reduce_gradients_in_buckets": reduce_gradients_in_buckets,
    "resolve_callable": resolve_callable,
    "resolve_obs_groups": resolve_obs_groups,
    "unpad_trajectories": unpad_trajectories,
}


def rsl_rl_version() -> str:
    """The installed rsl-rl-lib's version."""
    try:
        from importlib.metadata import version

        return version("rsl-rl-lib")
    except Exception:  # a source checkout without metadata
        return getattr(rsl_rl, "__version__", "unknown")


def _lookup(name: str):
    owner, _, attr = name.partition(".")
    obj = _NAMES[owner]
    return getattr(obj, attr, None) if attr else obj


def _parameters(fn) -> list[inspect.Parameter]:
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p for p in inspect.signature(fn).parameters.values() if p.name != "self" and p.kind not in skip]


def surface_mismatches() -> list[str]:
    """One line per name of ``SURFACE``/``CONSTRUCTOR_KEYWORDS`` that the installed rsl-rl-lib no longer matches."""
    problems = []
    for name, expected in SURFACE.items():
        fn = _lookup(name)
        if fn is None:
            problems.append(f"{name}: missing")
            continue
        params = _parameters(fn)
        # The names robolab uses, in order; anything after them must be optional (robolab does not pass it).
        got = tuple(p.name for p in params[: len(expected)])
        extra = [p.name for p in params[len(expected) :] if p.default is inspect.Parameter.empty]
        if got != expected or extra:
            problems.append(f"{name}: parameters {tuple(p.name for p in params)}, robolab expects {expected}")
    for name, keywords in CONSTRUCTOR_KEYWORDS.items():
        params = [p.name for p in _parameters(_lookup(name))]
        missing = [k for k in keywords if k not in params]
        if missing:
            problems.append(f"{name}: no parameter(s) {missing}")
    return problems
