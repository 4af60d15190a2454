#!/usr/bin/env bash
# gpu_all.sh parts run past one command's time limit on a machine that stays held between calls:
#   bash tests/bench/gpu_detached.sh start PART...   starts them in their own process session and
#                                                   returns after WAIT_S seconds (default 560)
#   bash tests/bench/gpu_detached.sh collect         waits up to WAIT_S for them to end
# Either way what they wrote so far comes back in $OUT (progress.log, gpu.tgz with every part's
# log and files), so a cut-off lease still returns the finished parts.
set -u
mode=${1:?start PART... or collect}; shift
work=/tmp/htam-gpu-detached; out_back=${OUT:-$PWD/gpu-out}; mkdir -p "$out_back"
if [ "$mode" = start ]; then
  rm -rf "$work"; mkdir -p "$work"
  OUT="$work/final" setsid nohup bash tests/bench/gpu_all.sh "$@" > "$work/progress.log" 2>&1 < /dev/null &
  echo $! > "$work/pid"
fi
deadline=$(( $(date +%s) + ${WAIT_S:-560} ))
while kill -0 "$(cat "$work/pid")" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 5; done
kill -0 "$(cat "$work/pid")" 2>/dev/null && echo "(still running)" >> "$work/progress.log"
cp "$work/progress.log" "$out_back/"
tar czf "$out_back/gpu.tgz" -C /tmp htam-gpu-out 2>/dev/null
tail -80 "$work/progress.log"
