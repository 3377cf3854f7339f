# Sourced by h200_warp.sh on the GPU machine: MuJoCo Warp and warp-lang, which its image lacks. warp-lang's wheel
# (149 MiB) is over what one device call carries, so it travels as an xz tarball of the unpacked wheels (warp's CPU
# compiler, examples and tests left out: the GPU needs none of them) split into parts, one call at a time:
#   here:  bash docs/benchmarks/warp_site.sh pack        (writes .wpparts/, ignored by git)
#   there: each call copies the parts it carries to /tmp/parts; the call holding the last joins, checks, unpacks.
set -u
NPARTS=5  # 16 MB each: one travels beside a 43 MB part of isaaclab_site.sh within a call's 64 MiB
if [ "${1:-}" = pack ]; then
  set -e
  build=$(mktemp -d); mkdir "$build/site"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
    -d "$build" warp-lang==1.19.0 mujoco-warp==4.0.0
  for w in "$build"/*.whl; do unzip -q -o "$w" -d "$build/site"; done
  rm -rf "$build"/site/warp/bin/warp-clang.so "$build"/site/warp/examples "$build"/site/warp/tests "$build"/site/mujoco_warp/test_data
  tar -cf - -C "$build/site" . | xz -9 -T0 > "$build/warp_site.tar.xz"
  rm -rf .wpparts && mkdir .wpparts
  (cd "$build" && sha256sum warp_site.tar.xz) > .wpparts/warp_site.sha256
  split -n "$NPARTS" -d "$build/warp_site.tar.xz" .wpparts/warp_site.part-
  rm -rf "$build"; ls -l .wpparts
  return 0 2>/dev/null || exit 0
fi
mkdir -p /tmp/parts
cp .wpparts/* /tmp/parts/ 2>/dev/null
if [ ! -d /tmp/site/mujoco_warp ] && [ -f /tmp/parts/warp_site.sha256 ] && [ "$(ls /tmp/parts/warp_site.part-* | wc -l)" = "$NPARTS" ]; then
  cat /tmp/parts/warp_site.part-* > /tmp/parts/warp_site.tar.xz
  (cd /tmp/parts && sha256sum -c warp_site.sha256) && mkdir -p /tmp/site && tar -xJf /tmp/parts/warp_site.tar.xz -C /tmp/site
fi
