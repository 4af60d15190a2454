#!/usr/bin/env bash
# The harness and offline-proposer GPU figures in one call on a machine with two GPUs
# (from the repository root):   bash tests/bench/gpu_pair.sh
#
#   GPU 0: tests/bench/gpu_offline.py, Triton backend          -> gpu_offline_triton.{txt,json}
#   GPU 1: tests/bench/gpu_offline.py, CUDA backend            -> gpu_offline_cuda.{txt,json}
#          and every GPU-marked test (pytest-xdist when present) -> gpu_tests.txt
#
# All three share one htam cache dir, so the per-GPU device lock keeps the tests' checks and
# timing from overlapping the CUDA bench's on GPU 1 (timings never share a GPU). Caps in seconds:
# PAIR_S (default 540). Extra arguments for both benches: OFFLINE_ARGS. Logs and JSON go to $OUT
# (or ./gpu-out), everything else into $OUT/gpu.tgz.
set -u
source "$(dirname "$0")/gpu_env.sh"
cap=${PAIR_S:-540}
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, triton, os; print('torch', torch.__version__, 'triton', triton.__version__, 'gpus', torch.cuda.device_count(), 'cores', os.cpu_count())" | tee -a "$OUT/device.txt"
ngpu=$(python3 -c "import torch; print(torch.cuda.device_count())")
other=$(( ngpu > 1 ? 1 : 0 ))
xdist=""; python3 -c "import xdist" 2>/dev/null && xdist="-n 4"
start=$(date +%s)
CUDA_VISIBLE_DEVICES=0 timeout "$cap" python3 tests/bench/gpu_offline.py --backends triton --tag _triton ${OFFLINE_ARGS:-} \
  > "$OUT/gpu_offline_triton.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=$other timeout "$cap" python3 tests/bench/gpu_offline.py --backends cuda --tag _cuda ${OFFLINE_ARGS:-} \
  > "$OUT/gpu_offline_cuda.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=$other timeout "$cap" python3 -m pytest -q -rfs --tb=short -m gpu -p no:cacheprovider $xdist \
  tests/htam_engine/evaluate/test_checks_gpu.py tests/htam_engine/evaluate/test_gpu.py \
  tests/faults/test_fault_worker.py tests/htam_engine/propose/offline/test_offline_gpu.py \
  > "$OUT/gpu_tests.txt" 2>&1 &
wait
echo "== pair took $(( $(date +%s) - start )) s"
for f in gpu_tests gpu_offline_triton gpu_offline_cuda; do echo "== $f"; tail -22 "$OUT/$f.txt"; done
tar czf "$FINAL/gpu.tgz" -C "$OUT" . && cp "$OUT"/*.txt "$OUT"/*.json "$FINAL"/ 2>/dev/null
true
