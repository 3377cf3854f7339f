# Isaac Lab 3.0's kitless stack for the GPU machines, which have no package index (issue 14).
#   here:  bash docs/benchmarks/isaaclab_site.sh pack    (writes .ilparts/, ignored by git; needs Python 3.12)
#   there: sourced by h200_isaaclab.sh; each call copies the parts it carries to /tmp/parts, and the call holding
#          the last joins them, checks the sha256, unpacks to /tmp/ilsite and installs robolab there (entry points).
# The set is what a kitless training run imports (sys.modules at exit of `isaaclab train` and robolab's train.py on
# Isaac-Velocity-Flat-UnitreeGo2, mapped to their distributions), less what the GPU image already has (torch, numpy,
# scipy, matplotlib, tensorboard, ...; device README). Left out: warp's CPU compiler (warp-clang), examples and
# tests, imageio-ffmpeg's 68 MB ffmpeg (moviepy reads FFMPEG_BINARY=auto-detect instead), botocore (tensorboard
# imports it only if present). mujoco and mujoco-warp are 3.12, the versions Isaac Lab's Newton pins.
set -u
WHEELS="isaaclab==3.0.0 newton==1.6.1 newton-usd-schemas==0.6.0 warp-lang==1.17.0 mujoco==3.12.0 mujoco-warp==3.12.0
  usd-exchange==3.0.1 rsl-rl-lib==5.5.1 tensordict==0.15.3 pyvers==0.2.3 gymnasium==1.4.0 farama-notifications==0.0.6
  hydra-core==1.3.8 hydra-joblib-launcher==1.2.0 omegaconf==2.3.1 gitpython==3.2.1
  gitdb==4.0.12 smmap==5.0.3 trimesh==5.2.0 meshio==5.3.5 shapely==2.2.0 rtree==1.4.1 prettytable==3.18.0
  wcwidth==0.9.4 ipython==9.18.1 traitlets==5.16.1 decorator==4.4.2 proglog==0.1.12 cmeel==0.62.0 glfw==2.11.0
  pyopengl==3.1.10"
NPARTS=3
if [ "${1:-}" = pack ]; then
  set -e
  PY312="${ROBOLAB_PYTHON312:-$HOME/.cache/robolab/isaaclab-venv/bin/python}"
  build=$(mktemp -d)
  # shellcheck disable=SC2086
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$build" $WHEELS
  "$PY312" -m pip wheel -q --no-deps -w "$build" moviepy==1.0.3 antlr4-python3-runtime==4.9.3  # sdists on PyPI
  "$PY312" -m pip install -q --no-index --no-deps --no-compile --target "$build/site" "$build"/*.whl
  (cd "$build/site" && rm -rf warp/bin/warp-clang.so warp/examples warp/tests mujoco_warp/test_data newton/examples \
    newton/tests newton/_src/solvers/kamino/examples isaaclab/test isaaclab_tasks/test bin)
  tar -cf - -C "$build/site" . | xz -6 -T0 > "$build/ilsite.tar.xz"
  rm -rf .ilparts && mkdir .ilparts
  (cd "$build" && sha256sum ilsite.tar.xz) > .ilparts/ilsite.sha256
  split -n "$NPARTS" -d "$build/ilsite.tar.xz" .ilparts/ilsite.part-
  rm -rf "$build"; ls -l .ilparts
  return 0 2>/dev/null || exit 0
fi
mkdir -p /tmp/parts
cp .ilparts/* /tmp/parts/ 2>/dev/null
if [ ! -d /tmp/ilsite/isaaclab ] && [ -f /tmp/parts/ilsite.sha256 ] && [ "$(ls /tmp/parts/ilsite.part-* | wc -l)" = "$NPARTS" ]; then
  cat /tmp/parts/ilsite.part-* > /tmp/parts/ilsite.tar.xz
  (cd /tmp/parts && sha256sum -c ilsite.sha256) && mkdir -p /tmp/ilsite && tar -xJf /tmp/parts/ilsite.tar.xz -C /tmp/ilsite \
    && rm /tmp/parts/ilsite.tar.xz
  # robolab itself, so Isaac Lab finds its tasks through the isaaclab.tasks entry point
  python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/ilsite . > /dev/null
fi
