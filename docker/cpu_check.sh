#!/usr/bin/env bash
# Build robolab's CPU image on a base made here (no registry needed) and run the compose file's CPU services:
#   1. one container, 2 gloo ranks (torchrun --standalone), the replication check every iteration;
#   2. the multi-node service as two "nodes" on this host (two compose projects, host network, c10d rendezvous; each
#      node gives its own LOCAL_ADDR, 127.0.0.1 and 127.0.0.2: torchrun tells nodes apart by address and process
#      id, and on one host, in containers, both are otherwise the same).
# Each run must end with exit code 0 and a summary.json of world_size 2. Needs root (debootstrap, docker), a running
# Docker engine, Debian's docker-compose and debootstrap. The whole output goes to $RECORD too.
#
#   bash docker/cpu_check.sh                      # RECORD=docs/benchmarks/docker_cpu/last_run.txt
#
# Settings (environment): BASE_IMAGE (default robolab-base:bookworm, made with debootstrap when missing),
# SUITE (bookworm), MIRROR, HOST_CA (a CA bundle baked into the base, for a TLS-inspecting proxy; default: this
# machine's), TORCH_VERSION (requirements/torch.txt), TORCH_WHEELS (a folder with a local CPU wheel of torch, default /opt/wheels),
# TORCH_INDEX_URL (PyTorch's CPU index where no local wheel is found), IMAGE (robolab:cpu), TRAIN_ARGS (a short run), MASTER_PORT (29533).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
RECORD="${RECORD:-$ROOT/docs/benchmarks/docker_cpu/last_run.txt}"
mkdir -p "$(dirname "$RECORD")"
exec > >(tee "$RECORD") 2>&1

BASE_IMAGE="${BASE_IMAGE:-robolab-base:bookworm}"
SUITE="${SUITE:-bookworm}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
HOST_CA="${HOST_CA:-/etc/ssl/certs/ca-certificates.crt}"
TORCH_VERSION="${TORCH_VERSION:-$(sed -n 's/^torch==//p' requirements/torch.txt)}"  # the project's one pin
TORCH_WHEELS="${TORCH_WHEELS:-/opt/wheels}"
IMAGE="${IMAGE:-robolab:cpu}"
TRAIN_ARGS="${TRAIN_ARGS:---num_envs 32 --max_iterations 3 --check_replication_every 1 --seed 7 env.backend.num_threads=1 agent.num_steps_per_env=8}"
MASTER_PORT="${MASTER_PORT:-29533}"
COMPOSE=(docker-compose -f "$ROOT/docker/docker-compose.yaml")

step() { printf '\n== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

step "docker: $(docker version --format '{{.Server.Version}}'), $("${COMPOSE[0]}" version --short)"

if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  step "base image $BASE_IMAGE: debootstrap $SUITE"
  rootfs="$(mktemp -d /var/tmp/robolab-rootfs.XXXXXX)"
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" > "$rootfs.log" 2>&1 || { tail -20 "$rootfs.log"; exit 1; }
  changes=()
  if [ -f "$HOST_CA" ]; then  # pip inside the image trusts what this machine trusts
    mkdir -p "$rootfs/etc/ssl" && cp "$HOST_CA" "$rootfs/etc/ssl/host-ca-bundle.crt"
    changes+=(--change "ENV PIP_CERT=/etc/ssl/host-ca-bundle.crt" --change "ENV SSL_CERT_FILE=/etc/ssl/host-ca-bundle.crt")
  fi
  tar -C "$rootfs" -c . | docker import "${changes[@]}" - "$BASE_IMAGE"
fi
step "base image: $(docker image inspect --format '{{.Id}} {{.Size}} bytes' "$BASE_IMAGE")"

# A local CPU wheel of torch, when this machine has one, saves a download.
find docker/wheels -maxdepth 1 -name 'torch-*.whl' -delete
for wheel in "$TORCH_WHEELS"/torch-"$TORCH_VERSION"+cpu-*.whl; do
  [ -f "$wheel" ] && cp "$wheel" docker/wheels/
done
# Without one, PyTorch's CPU index (PyPI's torch is the CUDA build).
default_index=https://download.pytorch.org/whl/cpu
ls docker/wheels/torch-*.whl >/dev/null 2>&1 && default_index=
TORCH_INDEX_URL="${TORCH_INDEX_URL-$default_index}"
step "build $IMAGE (torch $TORCH_VERSION; local wheels: $(ls docker/wheels | tr '\n' ' '))"
docker build -f docker/Dockerfile -t "$IMAGE" \
  --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg TORCH_VERSION="$TORCH_VERSION" \
  --build-arg TORCH_INDEX_URL="$TORCH_INDEX_URL" --build-arg EXTRAS=video .
find docker/wheels -maxdepth 1 -name 'torch-*.whl' -delete
docker run --rm "$IMAGE" python -c 'import torch, robolab; print("in the image: torch", torch.__version__, "robolab", robolab.__version__)'

logs="$(mktemp -d /tmp/robolab-docker-logs.XXXXXX)"
chown 1000:1000 "$logs"  # the image's user writes there
export ROBOLAB_IMAGE="$IMAGE" ROBOLAB_LOGS="$logs" TRAIN_ARGS

check_summary() {  # the newest summary.json under $1: world size 2, the iterations asked for
  local summary
  summary="$(find "$1" -name summary.json -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2)"
  [ -n "$summary" ] || { echo "no summary.json under $1"; exit 1; }
  python3 - "$summary" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"summary: world_size {s['world_size']}, iterations {s['iterations']}, env steps {s['total_env_steps']}")
assert s["world_size"] == 2, "expected 2 ranks"
PY
}

step "one container, 2 gloo ranks: docker-compose --profile cpu up train-cpu"
NPROC_PER_NODE=2 "${COMPOSE[@]}" -p robolab-cpu --profile cpu up --no-build --abort-on-container-exit \
  --exit-code-from train-cpu train-cpu
"${COMPOSE[@]}" -p robolab-cpu --profile cpu down --remove-orphans >/dev/null 2>&1
check_summary "$logs"

step "two nodes on this host: the multi-node service, one rank each, rendezvous at 127.0.0.1:$MASTER_PORT"
export NNODES=2 NPROC_PER_NODE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT RUN_ID="docker-cpu-$$"
pids=()
for rank in 0 1; do
  NODE_RANK=$rank LOCAL_ADDR=127.0.0.$((rank + 1)) "${COMPOSE[@]}" -p "robolab-node$rank" --profile cpu-multinode up --no-build \
    --abort-on-container-exit --exit-code-from train-node-cpu train-node-cpu > "$logs/node$rank.out" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for rank in 0 1; do sed "s/^/[node $rank] /" "$logs/node$rank.out"; done
for rank in 0 1; do "${COMPOSE[@]}" -p "robolab-node$rank" --profile cpu-multinode down >/dev/null 2>&1; done
[ "$status" = 0 ] || { echo "a node failed"; exit 1; }
check_summary "$logs/go2_flat"
ls -R "$logs" | head -40
step "done: both compose runs trained on 2 ranks and passed the replication check"
