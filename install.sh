#!/usr/bin/env bash
# Installs htam into the current Python environment.
#   ./install.sh          the app
#   ./install.sh test     the app and the test tools
# A torch that is already installed (a GPU box has its own) is kept; on a
# machine without one, the CPU build is installed first so that the package's
# unpinned torch requirement never pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
pip_install() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }
# PyTorch's own CPU wheel index: on an ordinary machine the default index's torch is the
# CUDA build (527 MB plus several GB of CUDA libraries), useless without a GPU.
CPU_INDEX=${HTAM_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
TORCH_PIN="torch==2.13.0"
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "htam: installing the CPU build of torch" >&2
  # A short timeout and no retries: an unreachable index (a closed network) falls back
  # to the default index at once instead of after minutes of retries.
  if ! pip_install --index-url "$CPU_INDEX" \
        --timeout 15 --retries 0 "$TORCH_PIN" numpy 2>/dev/null; then
    echo "htam: the CPU wheel index is unreachable; using the default index" >&2
    pip_install "$TORCH_PIN" numpy
  fi
fi
if ! "$PY" -c 'import triton' 2>/dev/null; then
  # Triton kernels run on the CPU through TRITON_INTERPRET=1.
  pip_install "triton==3.8.0" || echo "htam: triton unavailable; the triton backend is disabled" >&2
fi
extra=""
[ "${1:-}" = "test" ] && extra="[test]"
pip_install -e ".${extra}"
