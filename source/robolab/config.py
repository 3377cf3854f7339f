"""Hydra composition of the training config, and its split into the env dataclass and the agent dict.

The config tree ships inside the package (``robolab.hydra_configs``, the repository's ``config/``) and is read
through ``importlib.resources``, so a wheel finds it as well as a checkout. ``$ROBOLAB_CONFIG_DIR`` points at
another tree. Agent values are typed by ``robolab.rl_cfg`` and env values by the task's env dataclass.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import inspect
import os
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import hydra
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from robolab import tasks
from robolab.envs.velocity_env_cfg import RENAMED, TERM_TABLES
from robolab.errors import all_lines, first_line
from robolab.rl_cfg import AgentConfigError, register_schemas

CONFIG_MODULE = "robolab.hydra_configs"
REMOVE = "__remove__"
"""What ``~env.<table>.<term>`` becomes for Hydra: a term to remove, which must exist."""
PRESET_TOKENS = ("presets", "physics", "renderer")
"""Isaac Lab's preset selectors (``physics=newton_mjwarp``, ``presets=a,b``): handed to Isaac Lab, not to Hydra."""
# Training pipelines: each runner config works with exactly one algorithm config.
PIPELINES = {"on_policy": "ppo", "amp": "ppo_amp", "distillation": "distillation"}


class ConfigError(ValueError):
    """A bad override or config value; the message is one line and names the offending key."""


def config_source() -> str:
    """Where Hydra reads ``train.yaml``: ``$ROBOLAB_CONFIG_DIR``, else the installed ``robolab.hydra_configs``, else
    (a checkout put on ``PYTHONPATH`` without installing it) the checkout's ``config/``."""
    path = os.environ.get("ROBOLAB_CONFIG_DIR")
    if not path:
        if importlib.util.find_spec(CONFIG_MODULE) is not None:
            return f"pkg://{CONFIG_MODULE}"
        path = str(Path(__file__).resolve().parents[2] / "config")
    if not os.path.isfile(os.path.join(path, "train.yaml")):
        raise ConfigError(f"config directory {path!r} has no train.yaml (install robolab, or set ROBOLAB_CONFIG_DIR)")
    return os.path.abspath(path)


def _one_line(err: BaseException) -> str:
    """The error and its cause on one line (Hydra puts the reason a value was refused in the cause)."""
    text = all_lines(err)
    cause = err.__cause__
    if cause is not None and str(cause).strip():
        text += f": {first_line(cause)}"
    return text


def hydra_overrides(overrides: list[str]) -> list[str]:
    """Command-line overrides as Hydra must see them.

    ``env`` is an open node whose schema is the task's dataclass, checked in ``build_env_cfg``: its keys are
    force-added (``++``) so Hydra's struct mode does not reject them first. ``env.backend=warp`` names the backend
    (``env.backend.name=warp``). ``~env.rewards.lin_vel_z`` (Hydra's deletion) removes a term, which must exist;
    ``env.rewards.lin_vel_z=null`` removes it if it exists (as Isaac Lab's configs read ``None``).
    A key of the MDP before its terms were declared is a one-line error naming the new key, except a reward
    weight's, ``env.rewards.<term>=<number>``, which still sets ``env.rewards.<term>.weight``.
    """
    out = []
    for override in overrides:
        if override.startswith("~env."):
            override = f"{override[1:].partition('=')[0]}={REMOVE}"
        key, sep, value = override.partition("=")
        if key == "env.backend" and sep:
            override = f"env.backend.name={value}"
        elif key.lstrip("+").startswith("env.") and sep:
            override = _current_spelling(key.lstrip("+"), value)
        out.append(f"++{override.lstrip('+')}" if override.lstrip("+").startswith("env.") else override)
    return out


def _current_spelling(key: str, value: str) -> str:
    relative = key.removeprefix("env.")
    if relative in RENAMED:
        new = " and ".join(f"env.{k}={value}" for k in RENAMED[relative])
        raise ConfigError(f"{key} was renamed when the MDP became declared terms: use {new}")
    parts = relative.split(".")
    if len(parts) == 2 and parts[0] == "rewards" and is_number(value):
        return f"env.rewards.{parts[1]}.weight={value}"
    return f"{key}={value}"


def quoted(value: str) -> str:
    """``value`` as a quoted Hydra override value that reads back as exactly this string: any unicode, quotes,
    ``=``, a number-like ``1e3`` or ``null`` stay text, and ``${...}`` is not interpolated."""
    value = re.sub(r"(\\+)(?='|$|\$\{)", lambda m: m.group(1) * 2, value)  # backslashes before what they escape
    return "'" + value.replace("'", "\\'").replace("${", "\\${") + "'"


def is_number(text: str) -> bool:
    """Whether ``text`` parses as a float."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def user_overrides(hydra_form: list[str]) -> list[str]:
    """``hydra_overrides``'s output as a user writes it, for display and for handing on to a child process."""
    out = []
    for override in hydra_form:
        override = override.removeprefix("++") if override.startswith("++env.") else override
        key, _, value = override.partition("=")
        out.append(f"~{key}" if value == REMOVE and key.startswith("env.") else override)
    return out


def _read_yaml(source: str, relative: str) -> DictConfig:
    path = resources.files(CONFIG_MODULE).joinpath(relative) if source.startswith("pkg://") else Path(source, relative)
    node = OmegaConf.load(str(path))
    assert isinstance(node, DictConfig)
    return node


def pipeline_choices(source: str, hydra_task: str | None, overrides: list[str]) -> tuple[str | None, str | None]:
    """The runner and algorithm a composition will pick: ``train.yaml``'s, the task's overrides, the command line's.

    Read from the defaults lists without composing, so a mismatched pair is named before the schemas of the two
    would clash over keys. ``hydra_task=None``: a task config with no file (one in Hydra's ConfigStore).
    """
    choices: dict[str, str | None] = {"runner": None, "algorithm": None}
    for relative in ("train.yaml", *([f"task/{hydra_task}.yaml"] if hydra_task else [])):  # the task's wins
        for entry in _read_yaml(source, relative).get("defaults", []):
            if isinstance(entry, DictConfig):
                for key, value in entry.items():
                    group = str(key).removeprefix("override /")
                    if group in choices:
                        choices[group] = str(value)
    choices.update(command_line_pipeline(overrides))
    return choices["runner"], choices["algorithm"]


def command_line_pipeline(overrides: list[str]) -> dict[str, str]:
    """The ``runner=`` and ``algorithm=`` the overrides pick (the last of each)."""
    picked = {}
    for override in overrides:
        key, sep, value = override.partition("=")
        if sep and key in ("runner", "algorithm"):
            picked[key] = value
    return picked


def compose(
    task_id: str, overrides: list[str], config_name: str = "train", agent: str = tasks.DEFAULT_AGENT
) -> DictConfig:
    """Compose ``train.yaml`` for ``task_id`` (its agent entry point ``agent``) with ``overrides`` applied last.

    Isaac Lab's preset tokens among ``overrides`` are kept in the config as ``isaaclab_presets``.
    """
    register_schemas()
    source = config_source()
    presets, overrides = split_preset_tokens(overrides)
    hydra_task, task_overrides = task_config(task_id, agent, presets, overrides)
    overrides = [*task_overrides, *overrides]
    check_pipeline(*pipeline_choices(source, tasks.kind_of(task_id).task_file(hydra_task), overrides))
    try:
        init = (
            hydra.initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3", job_name="robolab")
            if source.startswith("pkg://")
            else hydra.initialize_config_dir(config_dir=source, version_base="1.3", job_name="robolab")
        )
        with init:
            cfg = hydra.compose(
                config_name=config_name,
                overrides=[f"task={hydra_task}", *hydra_overrides(overrides)],
                return_hydra_config=True,
            )
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(f"bad config override: {_one_line(err)}") from None
    with open_dict(cfg):
        del cfg["hydra"]
        cfg.isaaclab_presets = presets
    check_known_keys(cfg, _read_yaml(source, "train.yaml"))
    return cfg


def check_known_keys(cfg: DictConfig, train_yaml: DictConfig) -> None:
    """Every key is one the config declares: Hydra's ``+key=value`` adds keys anywhere, so a misspelt
    ``+distributed.timeout_sec=5`` or ``+agent.bogus=1`` would otherwise be accepted and never read. ``env.*`` keys
    are checked against the task's dataclass when the env config is built (``build_env_cfg``)."""
    top = {"agent", "env", "isaaclab_presets", *train_yaml.keys()} - {"defaults", "hydra"}
    _refuse_unknown("", set(cfg.keys()) - top, top)
    declared = set(train_yaml.distributed.keys())
    _refuse_unknown("distributed.", set(cfg.distributed.keys()) - declared, declared)
    _check_typed_keys(cfg.agent, "agent")


def _check_typed_keys(node: DictConfig, path: str) -> None:
    """Keys of a node typed by a dataclass (the agent schemas) must be its fields; nested typed nodes too."""
    schema = OmegaConf.get_type(node)
    if not dataclasses.is_dataclass(schema):
        return
    fields = {f.name for f in dataclasses.fields(schema)}
    _refuse_unknown(f"{path}.", set(node.keys()) - fields, fields)
    for key in fields & set(node.keys()):
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none():
            _check_typed_keys(child, f"{path}.{key}")


def _refuse_unknown(prefix: str, unknown: set, known: set) -> None:
    if unknown:
        key = sorted(map(str, unknown))[0]
        raise ConfigError(f"{prefix}{key}: no such setting (known: {', '.join(sorted(map(str, known)))})")


def split_preset_tokens(overrides: list[str]) -> tuple[list[str], list[str]]:
    """(Isaac Lab's preset tokens, the other overrides)."""
    presets = [o for o in overrides if o.partition("=")[0].lstrip("-") in PRESET_TOKENS and "=" in o]
    return presets, [o for o in overrides if o not in presets]


def task_config(task_id: str, agent: str, presets: list[str], overrides: list[str]) -> tuple[str, list[str]]:
    """The Hydra task config of ``task_id``'s agent ``agent``, and the overrides that go before the user's: the
    task's kind decides (``TaskKind.task_config``: a file under ``config/task``, an inline agent config, or an Isaac
    Lab rsl_rl agent class translated, both stored in Hydra's ConfigStore)."""
    return tasks.kind_of(task_id).task_config(task_id, agent, presets, overrides)


def check_pipeline(runner: str | None, algorithm: str | None) -> None:
    """Refuse a runner and algorithm that do not belong together, naming the allowed pairs."""
    if PIPELINES.get(runner or "") != algorithm:
        allowed = ", ".join(f"runner={r} algorithm={a}" for r, a in PIPELINES.items())
        raise ConfigError(f"runner={runner} does not work with algorithm={algorithm}; allowed pairs: {allowed}")


def build_env_cfg(task_id: str, env_overrides: DictConfig | dict, saved: dict | None = None):
    """The task's env dataclass with ``env.*`` overrides merged in (unknown keys and bad types are errors).

    ``saved``: a run's ``params/env.yaml``, applied before the overrides. Its term tables and its robot's actuator
    models replace the task's (a term the run removed stays removed; a run saved with servos keeps them); one written
    before the terms were declared is read through ``RENAMED``.
    A ``null`` for an entry of a term table removes that term if the table has it; ``~env.<table>.<term>`` (which
    ``hydra_overrides`` turns into ``REMOVE``) removes one that must exist.
    """
    base = OmegaConf.structured(tasks.load_env_cfg(task_id))
    overrides = copy.deepcopy(plain(env_overrides) if isinstance(env_overrides, DictConfig) else env_overrides)
    try:
        if saved is not None:
            saved, current = upgrade_saved_env(saved)
            for table in TERM_TABLES if current else ():
                if table in saved:
                    base[table] = {}
            if isinstance(saved.get("robot"), dict):  # the run's actuator models, none if it saved none
                base.robot.actuators = {}
            base = OmegaConf.merge(base, saved)
        assert isinstance(base, DictConfig)
        removed = _pop_removed_terms(base, overrides, ())
        env_cfg = OmegaConf.to_object(OmegaConf.merge(base, overrides))
        check_finite(env_cfg, "env")
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None)
        where = f"env.{key}: " if key else ""
        raise ConfigError(f"bad env config: {where}{_one_line(err)}") from None
    for path, strict in removed:
        table: Any = env_cfg
        for part in path[:-1]:
            table = table[part] if isinstance(table, dict) else getattr(table, part)
        if path[-1] not in table and not strict:
            continue
        if path[-1] not in table:
            where = "env." + ".".join(path[:-1])
            raise ConfigError(
                f"env.{'.'.join(path)}: no such term to remove ({where} has: {', '.join(table) or 'none'})"
            )
        del table[path[-1]]
    return env_cfg


def _pop_removed_terms(base: DictConfig, overrides: dict, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], bool]]:
    """Pop the removals (``null`` or ``REMOVE``) of term-table entries (dict-typed nodes of ``base``) out of
    ``overrides``: their paths, and whether the entry must exist."""
    removed = []
    for key, value in list(overrides.items()):
        node = base.get(key) if isinstance(base, DictConfig) else None
        table = isinstance(base, DictConfig) and OmegaConf.get_type(base) is dict
        if value == REMOVE and not table:
            raise ConfigError(
                f"~env.{'.'.join((*path, key))}: only a term of a table (rewards, events, ...) can be removed"
            )
        if (value is None or value == REMOVE) and table:
            removed.append(((*path, key), value == REMOVE))
            del overrides[key]
        elif isinstance(value, dict) and isinstance(node, DictConfig):
            removed += _pop_removed_terms(node, value, (*path, key))
    return removed


def upgrade_saved_env(saved: dict) -> tuple[dict, bool]:
    """A run's saved env config in the current spelling, and whether it was written with declared terms.

    One written before (its keys in ``RENAMED``, reward weights as numbers) has its values moved to the keys that
    hold them now; its tables then merge onto the task's instead of replacing them.
    """
    flat = _flatten(saved)
    old = any(key in RENAMED for key in flat) or any(
        isinstance(v, (int, float)) for v in (saved.get("rewards") or {}).values()
    )
    if not old:
        return saved, True
    upgraded: dict = {}
    for key, value in flat.items():
        if key in RENAMED:
            targets = RENAMED[key]
        elif key.startswith("rewards.") and key.count(".") == 1:
            targets = (f"{key}.weight",)
        else:
            targets = (key,)
        for target in targets:
            _set_path(upgraded, target, value)
    return upgraded, False


def _flatten(node: dict, prefix: str = "") -> dict:
    """Dotted keys down to the leaves, except inside the robot and the gaits (whole values there)."""
    flat = {}
    for key, value in node.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and name not in ("robot", "gaits"):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _set_path(node: dict, dotted: str, value) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


def agent_dict(cfg: DictConfig) -> dict:
    """The rsl_rl runner config as the plain dict rsl_rl expects, its ranges checked (``robolab.rl_cfg``)."""
    try:
        agent = OmegaConf.to_object(cfg.agent)
    except AgentConfigError as err:
        raise ConfigError(str(err)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"bad agent config: {_one_line(err)}") from None
    data = dataclasses.asdict(agent) if dataclasses.is_dataclass(agent) else dict(agent)  # type: ignore[arg-type]
    check_finite(data, "agent")
    check_class_names(data)
    return data


def saved_agent_dict(saved: dict, given: dict, source: str) -> dict:
    """A run's saved agent config (``params/agent.yaml``, already checked by ``runs.check_saved_names``) with the
    command line's ``agent.*`` on top, typed and range-checked by the schemas of the run's own pipeline (a file of
    the wrong types is one line naming it, never a traceback deep in rsl_rl). Keys the schemas no longer have (an
    older robolab's) are dropped."""
    from robolab import rl_cfg

    runner = str(saved.get("runner_class_name", ""))
    algorithm = (
        str((saved.get("algorithm") or {}).get("class_name", "")) if isinstance(saved.get("algorithm"), dict) else ""
    )
    runner_schema = rl_cfg.DistillationRunnerCfg if runner.endswith("DistillationRunner") else rl_cfg.OnPolicyRunnerCfg
    algorithm_schema = (
        rl_cfg.PpoAmpCfg
        if algorithm.endswith("PPOAMP")
        else rl_cfg.DistillationCfg
        if algorithm.endswith("Distillation")
        else rl_cfg.PpoCfg
    )
    try:
        base = OmegaConf.structured(runner_schema)
        base.algorithm = OmegaConf.structured(algorithm_schema)
        agent = OmegaConf.to_object(OmegaConf.merge(base, _known_keys(base, saved), given))
    except AgentConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    except (OmegaConfBaseException, TypeError, ValueError) as err:
        raise ConfigError(f"{source}: bad agent config: {_one_line(err)}") from None
    data = dataclasses.asdict(agent)  # type: ignore[arg-type]
    for key in ("algorithm", *(m for m in MODEL_KEYS if m in data)):
        if not isinstance(data.get(key), dict):
            raise ConfigError(f"{source}: agent.{key} is {data.get(key)!r}, not a mapping of settings (a cut file?)")
    check_finite(data, "agent")
    check_class_names(data)
    return data


def _known_keys(node: DictConfig, data: Any) -> Any:
    """``data`` without the keys that a dataclass-typed ``node`` (and its typed children) does not declare."""
    if not (isinstance(data, dict) and dataclasses.is_dataclass(OmegaConf.get_type(node))):
        return data
    out = {}
    for key, value in data.items():
        if key in node:
            child = node._get_node(key)
            out[key] = _known_keys(child, value) if isinstance(child, DictConfig) else value
    return out


MAX_SETTING = 1.0e6
"""The largest magnitude a real-valued setting may have. No quantity of a legged-robot task comes near it (the
largest defaults are divergence bounds of 1e5), and beyond it float32 sums and squares overflow into NaN losses."""


def leaves(tree: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every leaf of a config tree (dataclasses, dicts, lists and tuples) with its dotted key (``a.b.0`` for a list's
    first element)."""
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        for field in dataclasses.fields(tree):
            yield from leaves(getattr(tree, field.name), f"{path}.{field.name}")
    elif isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, f"{path}.{key}")
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            yield from leaves(value, f"{path}.{i}")
    else:
        yield path, tree


def check_finite(tree: Any, path: str) -> None:
    """Every real number in a config (dataclasses, dicts, lists) is finite and within ``MAX_SETTING``: a NaN,
    infinite or absurd setting is one line naming its key, before it can reach the physics or the update (where it
    surfaces as NaN rewards or a torch error, with a run directory already written)."""
    for key, value in leaves(tree, path):
        if isinstance(value, float) and not abs(value) <= MAX_SETTING:  # NaN fails the comparison too
            shown = "must be a finite number" if value != value or abs(value) == float("inf") else "must be within"
            raise ConfigError(f"{key}={value}: {shown} within +-{MAX_SETTING:g}")


MODEL_KEYS = ("actor", "critic", "student", "teacher")


def check_class_names(agent: dict) -> None:
    """The runner, algorithm and model classes the agent config names resolve (rsl_rl's resolver: ``module:Class``,
    ``module.Class`` or an rsl_rl name); one line naming the key otherwise."""
    from robolab.rsl_rl_api import resolve_callable

    names = {"agent.runner_class_name": agent.get("runner_class_name")}
    names["agent.algorithm.class_name"] = (agent.get("algorithm") or {}).get("class_name")
    names.update({f"agent.{m}.class_name": agent[m].get("class_name") for m in MODEL_KEYS if agent.get(m)})
    for key, name in names.items():
        if name is None:
            continue
        try:
            target = resolve_callable(name)
        except Exception as err:  # ImportError, AttributeError, ValueError, TypeError: the name is wrong
            raise ConfigError(f"{key}={name!r}: cannot be resolved ({first_line(err)[:160]})") from None
        model = key.split(".")[1]
        if model in MODEL_KEYS:
            _check_model_arguments(f"agent.{model}", target, agent[model])


def _check_model_arguments(key: str, model_class, entry: dict) -> None:
    """A model entry's keys are keyword arguments of its class (rsl_rl passes them on as they are)."""
    try:
        parameters = inspect.signature(model_class).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = {p.name for p in parameters}
    unknown = sorted(set(entry) - accepted - {"class_name"})
    if unknown:
        name = getattr(model_class, "__name__", str(model_class))
        raise ConfigError(f"{key}.{unknown[0]}: not an argument of {name} (it takes: {', '.join(sorted(accepted))})")


def plain(node: DictConfig) -> dict:
    """A composed config node as plain Python data, interpolations resolved."""
    data = OmegaConf.to_container(node, resolve=True)
    assert isinstance(data, dict)
    return data


def to_yaml(obj) -> str:
    """A dataclass config (or a dict) as YAML, as ``params/*.yaml`` hold it."""
    return OmegaConf.to_yaml(OmegaConf.structured(obj) if not isinstance(obj, (dict, DictConfig)) else obj)
