"""The documentation: every command block of the README and the documentation site either runs here, or says what
it needs and where the committed run that shows it worked lies; config fields, public functions and classes have
docstrings (the API reference is made of them); one version, one torch pin.

A ``bash`` block whose first line reads ``# needs <what>: <path>`` (a GPU, several GPUs, a cluster, Isaac Lab, a fresh
machine, a display) is not run; ``<path>`` must exist in the repository (a benchmark record, a test, ``.ci/run``).
Every other block runs, page by page and in order (a page's ``play.py`` finds the run its ``train.py`` made), in a
scratch folder, with small sizes: a training run gets 16 envs and one short iteration, an evaluation 16 envs and
a few steps. A command the rewriting below does not know fails the test, so a new block is either runnable or
marked.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, clean_env

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS = re.compile(r"^# needs (?P<what>[^:]+): (?P<evidence>\S+)$")
PROGRAMS = {p.stem for p in (ROOT / "scripts").glob("*.py")}
# Flags set to small values (replacing the page's) per program; training also gets a short rollout.
SMALL = {
    "train": {"--num_envs": "16", "--max_iterations": "1"},
    "play": {"--num_envs": "16", "--steps": "5"},
    "sim2sim": {"--num_envs": "8", "--steps": "5"},
    "benchmark": {"--num_envs": "16", "--iterations": "1"},
    "warmup": {"--num_envs": "4"},
}
TRAIN_OVERRIDES = ["env.backend.num_threads=1", "agent.num_steps_per_env=4"]


def command_blocks(page: Path) -> list[tuple[int, list[str]]]:
    """The page's ``bash`` blocks: (line number, lines with continuations joined)."""
    blocks, current, start = [], None, 0
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if current is None and line.strip() == "```bash":
            current, start = [], number
        elif current is not None and line.strip() == "```":
            joined, pending = [], ""
            for raw in current:
                if raw.rstrip().endswith("\\"):
                    pending += raw.rstrip()[:-1] + " "
                else:
                    joined.append(pending + raw)
                    pending = ""
            blocks.append((start, joined))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def marked(lines: list[str]) -> re.Match | None:
    return NEEDS.match(lines[0].strip()) if lines else None


def small(line: str) -> list[list[str]]:
    """The commands of one documented line, rewritten to small sizes and this interpreter; [] for a comment."""
    words = shlex.split(line, comments=True)
    commands, current = [], []
    for word in [*words, "&&"]:
        if word == "&&":
            if current:
                commands.append(current)
            current = []
        else:
            current.append(word)
    return [rewrite(command) for command in commands]


def rewrite(words: list[str]) -> list[str]:
    if words[0] in ("python", "python3") and len(words) > 1 and words[1] == "-c":
        return [sys.executable, *words[1:]]
    if words[0] == "torchrun":  # its own flags, then the program's: gloo ranks on this CPU
        script = next(i for i, word in enumerate(words) if word.startswith("scripts/"))
        program = rewrite(["python", *words[script:]])
        return [sys.executable, "-m", "torch.distributed.run", *words[1:script], *program[1:]]
    if words[0] in ("python", "python3") and len(words) > 1 and words[1].startswith("scripts/"):
        program, args = Path(words[1]).stem, words[2:]
    elif words[0].startswith("robolab-"):
        program, args = words[0][len("robolab-") :].replace("-", "_"), words[1:]
    else:
        raise AssertionError(f"not a command this test knows how to run small: {' '.join(words)} (mark the block)")
    assert program in PROGRAMS, program
    sizes = dict(SMALL.get(program, {}))
    if "--terrain_eval" in args:  # one env per tile of the evaluation terrain
        sizes["--num_envs"] = "100"
    if "--video" in args and program != "train":  # a short clip
        sizes["--video_length"] = "10"
    kept, skip = [], False
    for word in args:
        if skip:
            skip = False
            continue
        flag = word.split("=", 1)[0]
        if flag in sizes:
            skip = "=" not in word
            continue
        kept.append(word)
    extra = [item for flag, value in sizes.items() for item in (flag, value)]
    if program == "train":
        extra += TRAIN_OVERRIDES
    return [sys.executable, str(ROOT / "scripts" / f"{program}.py"), *kept, *extra]


def test_every_block_runs_here_or_names_what_it_needs_and_the_run_that_shows_it():
    seen, problems = 0, []
    for page in PAGES:
        for start, lines in command_blocks(page):
            seen += 1
            where = f"{page.relative_to(ROOT)}:{start}"
            need = marked(lines)
            if need:
                if not (ROOT / need["evidence"]).exists():
                    problems.append(f"{where}: {need['evidence']} (the run that shows it) is not in the repository")
                continue
            for line in lines:
                command = line.split("#")[0]
                if "<" in command:
                    problems.append(f"{where}: a placeholder in {line!r}")
                    continue
                for needs_more in ("--device cuda", "--viewer"):  # a GPU; a viewer runs until it is closed
                    if needs_more in command:
                        problems.append(f"{where}: {needs_more} in an unmarked block: {line!r}")
                try:
                    small(line)
                except AssertionError as err:
                    problems.append(f"{where}: {err}")
    assert seen > 20  # the pages were read
    assert not problems, "\n".join(problems)


def test_every_field_of_the_agent_and_env_configs_is_documented_where_it_is_declared():
    """The API reference is generated from docstrings: a config field without one is undocumented there."""
    modules = [
        "rl_cfg.py",
        "envs/velocity_env_cfg.py",
        "envs/terms.py",
        "terrains/config.py",
        "assets/robot_cfg.py",
        "amp/gait.py",
        "amp/biped.py",
    ]
    missing = []
    for module in modules:
        tree = ast.parse((ROOT / "source" / "robolab" / module).read_text())
        for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name.endswith("Cfg")):
            for i, statement in enumerate(cls.body):
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    after = cls.body[i + 1] if i + 1 < len(cls.body) else None
                    documented = isinstance(after, ast.Expr) and isinstance(getattr(after, "value", None), ast.Constant)
                    if not documented:
                        missing.append(f"{module}: {cls.name}.{statement.target.id}")
    assert not missing, "fields without a docstring: " + ", ".join(missing)


def runnable_pages() -> list[Path]:
    return [page for page in PAGES if any(not marked(lines) for _, lines in command_blocks(page))]


@pytest.mark.slow
@pytest.mark.parametrize("page", runnable_pages(), ids=lambda page: page.name)
def test_the_pages_commands_run(page, tmp_path):
    """The page's unmarked blocks, in order, in a scratch folder whose ``scripts`` is the repository's."""
    (tmp_path / "scripts").symlink_to(ROOT / "scripts")
    env = clean_env(MUJOCO_GL="egl", ROBOLAB_PROGRESS="0")
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    for start, lines in command_blocks(page):
        if marked(lines):
            continue
        for line in lines:
            for command in small(line):
                done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
                assert done.returncode == 0, (
                    f"{page.name}:{start}: {' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}"
                )


def test_one_version_and_one_torch_pin():
    """The version is the same in extension.toml (the wheel's), the package and the changelog's newest entry; torch
    is pinned once, in requirements/torch.txt, which CI and the Docker image read."""
    import tomllib

    import robolab

    version = tomllib.loads((ROOT / "extension.toml").read_text())["package"]["version"]
    newest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert robolab.__version__ == version == (newest and newest[1])
    pins = [line for line in (ROOT / "requirements" / "torch.txt").read_text().splitlines() if line.startswith("torch")]
    assert len(pins) == 1 and re.fullmatch(r"torch==[\d.]+", pins[0]), pins
    for user in (".ci/run", "docker/Dockerfile", "docker/cpu_check.sh"):
        text = (ROOT / user).read_text()
        assert "requirements/torch.txt" in text and not re.search(r"torch==\d", text), user


def test_every_public_function_and_class_of_the_package_has_a_docstring():
    """The API reference shows what has a docstring: a public module-level function or class without one is missing
    from it (methods inherit their base's, as the backends' do)."""
    missing = []
    for path in sorted((ROOT / "source" / "robolab").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            public = isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_")
            if public and ast.get_docstring(node) is None:
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not missing, "no docstring: " + ", ".join(missing)


def test_every_script_is_also_a_console_script():
    """``scripts/<name>.py`` and ``robolab-<name>`` run the same ``main`` (console scripts come with the install)."""
    from importlib.metadata import entry_points

    scripts = {e.name: e for e in entry_points(group="console_scripts") if e.name.startswith("robolab-")}
    for path in (ROOT / "scripts").glob("*.py"):
        module = re.search(r"^from (robolab\.cli\.\w+) import main$", path.read_text(), re.M)
        assert module, f"{path.name} does not run a robolab.cli main"
        targets = {e.value for e in scripts.values()}
        assert f"{module[1]}:main" in targets, f"{path.name}: no robolab-* console script runs {module[1]}:main"
    for entry in scripts.values():
        assert callable(entry.load()), entry
