# Sourced by the GPU bench scripts: $FINAL gets the logs back, $OUT is a scratch dir whose
# contents are packed into $FINAL/gpu.tgz; wheels for packages the machine lacks come from .whl/.
FINAL=${OUT:-$PWD/gpu-out}; mkdir -p "$FINAL"
export OUT=/tmp/htam-gpu-out; rm -rf "$OUT"; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 HTAM_CACHE_DIR=${HTAM_CACHE_DIR:-/tmp/htam-cache}
