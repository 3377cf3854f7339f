# Sourced by the h200_*.sh scripts that run through the device tool: the output folder, the wheels the GPU machine
# lacks (carried in .whl/ by one call, installed to /tmp/site, which later calls on the same warm machine find), and
# NCCL without NVLink multicast (the device README's advice).
OUT="${OUT:-h200_out}"; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site:$PWD/source
# Byte code, as a user's pip install leaves it. The GPU image sets PYTHONDONTWRITEBYTECODE and its torch has none, the
# packages above are installed --no-compile, and the carried tree is new in every call: each process compiled ~2000
# modules, 7 s of its start-up (startup_profile.py's cProfile on the H200). compileall skips what is up to date.
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q -j 0 "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" /tmp/site \
  "$PWD/source" > /dev/null 2>&1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
