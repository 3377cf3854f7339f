"""docker compose and Slurm files: valid, and their commands accepted by torchrun and scripts/train.py (the Slurm
script on a real cluster: tests/test_slurm.py)."""

from __future__ import annotations

import shlex
import subprocess

import pytest
import yaml
from torch.distributed.run import get_args_parser

from conftest import ROOT, clean_env
from robolab.cli.train import build_parser
from robolab.config import build_env_cfg, compose
from robolab.launch import TrainOptions

COMPOSE = ROOT / "docker" / "docker-compose.yaml"
PROFILES = ["--profile", "multinode", "--profile", "cpu", "--profile", "cpu-multinode"]
GPU_SERVICES = {"train": "train-cpu", "train-node": "train-node-cpu"}  # each GPU service and its CPU twin


def compose_config(**variables: str) -> dict:
    res = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), *PROFILES, "config"],
        capture_output=True,
        text=True,
        env=clean_env(**variables),
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    return yaml.safe_load(res.stdout)


def container_argv(command: str, **container_env: str) -> list[str]:
    """The argv that ``sh -c "torchrun ..."`` starts in the container (``docker-compose config`` prints ``$`` as
    ``$$``; the shell then expands what is left, with the container's environment)."""
    argv = shlex.split(command.replace("$$", "$"))
    assert argv[:2] == ["sh", "-c"] and argv[2].startswith("torchrun ")
    script = "printf '%s\\0' " + argv[2][len("torchrun ") :]  # the arguments torchrun would get, one per NUL
    res = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=clean_env(**container_env))
    assert res.returncode == 0, res.stderr
    return ["torchrun", *res.stdout.split("\0")[:-1]]


def check_train_command(command: str, **container_env: str) -> tuple:
    """Parse ``sh -c "torchrun ... scripts/train.py ..."`` the way the shell, torchrun and train.py would."""
    inner = container_argv(command, **container_env)
    launch = get_args_parser().parse_args(inner[1:])  # exits on anything torchrun would reject
    assert launch.training_script == "scripts/train.py" and (ROOT / launch.training_script).is_file()
    args, overrides = build_parser().parse_known_args(launch.training_script_args)
    assert args.distributed and args.headless and args.log_root == "/logs"
    cfg = compose(
        args.task, TrainOptions.from_namespace(args).overrides() + overrides
    )  # every override is a real config key
    build_env_cfg(args.task, cfg.env)
    return launch, args


def test_compose_file_validates_and_its_commands_parse():
    services = compose_config(
        NPROC_PER_NODE="2",
        TRAIN_ARGS="--num_envs 64 agent.algorithm.learning_rate=3e-4 env.rewards.feet_air_time.weight=0.5",
        NNODES="2",
        NODE_RANK="1",
        MASTER_ADDR="10.1.2.3",
        MASTER_PORT="29400",
        RUN_ID="exp7",
    )["services"]
    launch, args = check_train_command(services["train"]["command"])
    assert launch.standalone and launch.nproc_per_node == "2" and args.num_envs == 64
    launch, args = check_train_command(services["train-node"]["command"], LOCAL_ADDR="10.1.2.4")
    assert launch.nnodes == "2" and launch.node_rank == 1 and launch.rdzv_endpoint == "10.1.2.3:29400"
    assert launch.local_addr == "10.1.2.4"
    assert args.resume == "auto" and args.run_name == "exp7"
    assert set(services) == {*GPU_SERVICES, *GPU_SERVICES.values()}
    for name, service in services.items():
        assert "ports" not in service, f"{name} publishes a port"
        assert service["shm_size"] in ("16gb", 17179869184)
    for gpu, cpu in GPU_SERVICES.items():
        devices = services[gpu]["deploy"]["resources"]["reservations"]["devices"][0]
        assert devices["capabilities"] == ["gpu"] and devices["count"] == "all"
        # the CPU twin runs the same command with no GPU reservation (docker refuses one without NVIDIA's runtime)
        assert "deploy" not in services[cpu] and services[cpu]["command"] == services[gpu]["command"]
        # NCCL's pinned memory wants no memlock cap; a host with a lower hard limit refuses it, so gloo asks none
        assert services[gpu]["ulimits"]["memlock"] == -1 and "memlock" not in services[cpu]["ulimits"]
    assert services["train-node"]["network_mode"] == services["train-node-cpu"]["network_mode"] == "host"


def test_compose_passes_nccl_knobs_through_only_when_set():
    services = compose_config(NCCL_IB_DISABLE="1", NCCL_SOCKET_IFNAME="eth0")["services"]
    env = services["train"]["environment"]
    assert env["NCCL_IB_DISABLE"] == "1" and env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert env["NCCL_SHM_DISABLE"] is None  # unset on the host: no value, so compose leaves it unset


def test_default_compose_command_parses_without_any_variables():
    services = compose_config()["services"]
    for name in (*GPU_SERVICES, *GPU_SERVICES.values()):
        launch, _ = check_train_command(services[name]["command"])
        # torchrun's "auto": a rank per GPU on a GPU node, per core on a CPU node ("gpu" fails without CUDA)
        assert launch.nproc_per_node == "auto", name
        assert launch.local_addr is None, name  # no LOCAL_ADDR: torchrun finds the node's address itself


def test_dockerfile_runs_as_a_non_root_user_with_a_logs_volume():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert "USER robolab" in text and 'VOLUME ["/logs"]' in text and "requirements/torch.txt" in text


def test_the_docker_build_context_leaves_out_what_the_image_does_not_need():
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    ignored = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for heavy in (".venv", "logs", ".git", "docs", "tests"):  # the build context was 2.3 GB with .venv
        assert heavy in ignored, heavy
    lines = (ROOT / "docker" / "Dockerfile").read_text().splitlines()
    copied = [source for line in lines if line.startswith("COPY ") for source in line.split()[1:-1]]
    assert "source" in copied and "docker/wheels/" in copied
    for source in copied:
        assert source.rstrip("/") not in ignored and (ROOT / source).exists(), source


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"LAUNCH": "mpirun"}, "error: LAUNCH=mpirun (allowed: srun, torchrun)"),
        # torchrun's own "gpu" count is a traceback on a CPU node ("Cuda is not available"): refused in one line
        ({"LAUNCH": "torchrun", "NPROC_PER_NODE": "gpu"}, "error: NPROC_PER_NODE=gpu (allowed: a positive number"),
        ({"LAUNCH": "torchrun", "SLURM_TASKS_PER_NODE": "0"}, "error: NPROC_PER_NODE=0 (allowed"),
    ],
)
def test_the_sbatch_script_refuses_a_bad_launch_setting_in_one_line(variables, message):
    # the script on a real Slurm cluster: tests/test_slurm.py
    env = clean_env(SLURM_SUBMIT_DIR=str(ROOT), SLURM_JOB_ID="4242", MASTER_ADDR="127.0.0.1", **variables)
    script = str(ROOT / "scripts" / "slurm" / "train.sbatch")
    res = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [res.stderr.strip()], res.stderr
    assert message in res.stderr
