#!/usr/bin/env bash
# Every GPU figure htam reports, in one call on a CUDA machine (from the repository root):
#   bash tests/bench/gpu_all.sh [tests] [harness] [offline] [batch]     (default: all)
#   bash tests/bench/gpu_all.sh ablation     the memory-value experiment alone (8 minutes; needs
#                                            HTAM_KERNELBENCH; its table.jsonl comes back in gpu.tgz;
#                                            ABLATION_TABLE=FILE starts it from a copy of a table measured before)
#   bash tests/bench/gpu_all.sh memory       peak memory of an evaluation, the largest level-1 problems (gpu_memory.py;
#                                            MEMORY_HISTORY=1 adds what each peak is made of: memory_peak.py)
#   bash tests/bench/gpu_all.sh probe        a short kernel's time under each variant of the protocol (PROBE_ARGS:
#                                            SOLUTION PROBLEM; gpu_probe_timing.py)
#   bash tests/bench/gpu_all.sh probe:SOLUTION:levelN/NAME   the same for one export of a KernelBench problem
#                                            (several such parts run in one call; gpu_session.sh's probe94, probe12)
#   bash tests/bench/gpu_all.sh probeeval:SOLUTION:levelN/NAME   htam's traced evaluation of it alone (each
#                                            sandbox's phases, ~30 s; gpu_session.sh's probeeval: 1/12, 1/88, 1/94)
#   bash tests/bench/gpu_all.sh probehost    the same solution with its process pinned, its gc off, the sandbox's guards off
#                                            (PROBE_ARGS; gpu_probe_host.py): what slows its forward's launch there
#   bash tests/bench/gpu_all.sh probeconv    eager, torch.compile and the convolution in each layout (PROBECONV_ARGS:
#                                            level/number list; gpu_probe_conv.py; Inductor's code under $OUT)
#   bash tests/bench/gpu_all.sh variants     one problem's candidate under several knob settings, measured directly
#                                            (VARIANTS_ARGS: level/number list, --preset gemm or --variant JSON)
#   bash tests/bench/gpu_all.sh verify       htam verify over the exported solutions in VERIFY_EXPORTS (a folder, carried
#                                            to the machine), else the exports of kbtable's batch (VERIFY_BATCH, or kbtable run
#                                            before it in this call), else of gpu_verify.py's own 33-problem batch
#                                            (VERIFY_RESUME: an earlier call's verify folder to go on from, e.g. the
#                                            returned htam-gpu-out/verify carried as .verify-work; VERIFY_ARGS="--resume
#                                            FILE": an earlier call's gpu_verify.json, its rows kept, with
#                                            HTAM_BENCH_COMMIT=<commit> since the machine's copy has no git history)
#   bash tests/bench/gpu_all.sh throughput   the worker pool against one at a time (gpu_batch.py --parts throughput)
#   bash tests/bench/gpu_all.sh landlock     whether a GPU comes up under the sandbox's write ruleset (gpu_probe_landlock.py)
#   bash tests/bench/gpu_all.sh tritonfirst  where a Triton candidate's first call in a fresh sandbox spends its time
#   bash tests/bench/gpu_all.sh kbtable      the KernelBench level 1+2 table alone (its --deadline, default 480 s, + 2 min; needs
#                                            HTAM_KERNELBENCH; kb_table.md/.json under $OUT)
#   bash tests/bench/gpu_all.sh kbcuda       the same table on the CUDA backend (KBCUDA_ARGS; kb_table.md/.json under $OUT/cuda)
# Per part: <PART>_ARGS passes arguments, <PART>_S caps its seconds (TESTS_ARGS, OFFLINE_S, ...).
# Wheels for packages the machine lacks travel in .whl/ (see README, "GPU runs").
# Logs go to $OUT (or ./gpu-out); everything the parts write (JSON, batch sessions, reports) is
# packed into $OUT/gpu.tgz, since a lease returns only a few files. One part failing does not stop
# the others.
set -u
source "$(dirname "$0")/gpu_env.sh"
parts=${*:-tests harness offline batch}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/device.txt"
# the kernel's speculation mitigations: in their "seccomp" mode a filtered sandbox would run them (seccomp.py)
(uname -r; grep . /sys/devices/system/cpu/vulnerabilities/spec_store_bypass /sys/devices/system/cpu/vulnerabilities/spectre_v2) 2>&1 | tee -a "$OUT/device.txt"
for part in $parts; do
  start=$(date +%s)
  case $part in
    tests)   HTAM_TEST_FAILURES_NOW=1 timeout ${TESTS_S:-300} python3 -m pytest -v -rfE --tb=short -m gpu -n 0 -p no:cacheprovider ${TESTS_ARGS:-tests} > "$OUT/gpu_tests.txt" 2>&1; grep -E "PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED|passed|failed" "$OUT/gpu_tests.txt" | tail -60 ;;
    harness) timeout ${HARNESS_S:-300} python3 tests/bench/gpu_harness.py ${HARNESS_ARGS:-} > "$OUT/gpu_harness.txt" 2>&1; tail -25 "$OUT/gpu_harness.txt" ;;
    offline) timeout ${OFFLINE_S:-300} python3 tests/bench/gpu_offline.py ${OFFLINE_ARGS:-} > "$OUT/gpu_offline.txt" 2>&1; tail -25 "$OUT/gpu_offline.txt" ;;
    batch)   timeout ${BATCH_S:-420} python3 tests/bench/gpu_batch.py ${BATCH_ARGS:-} > "$OUT/gpu_batch.txt" 2>&1; tail -30 "$OUT/gpu_batch.txt" ;;
    kbtable) timeout ${KBTABLE_S:-640} python3 tests/bench/kb_table.py --device cuda --out "$OUT" ${KBTABLE_ARGS:-} \
               > "$OUT/kb_table.txt" 2>&1; tail -230 "$OUT/kb_table.txt"; cp "$OUT"/kb_table.md "$OUT"/kb_table.json "$FINAL"/ 2>/dev/null ;;
    kbcuda)  mkdir -p "$OUT/cuda" "$FINAL/cuda"
             timeout ${KBCUDA_S:-640} python3 tests/bench/kb_table.py --device cuda --backend cuda --out "$OUT/cuda" ${KBCUDA_ARGS:-} \
               > "$OUT/kb_table_cuda.txt" 2>&1; tail -230 "$OUT/kb_table_cuda.txt"; cp "$OUT"/cuda/kb_table.md "$OUT"/cuda/kb_table.json "$FINAL"/cuda/ 2>/dev/null ;;
    ablation) if [ -n "${ABLATION_TABLE:-}" ]; then mkdir -p "$OUT/ablation" && cp "$ABLATION_TABLE" "$OUT/ablation/table.jsonl"; fi
             timeout ${ABLATION_S:-570} python3 tests/bench/gpu_ablation.py ${ABLATION_ARGS:---deadline 480} > "$OUT/gpu_ablation.txt" 2>&1; tail -60 "$OUT/gpu_ablation.txt" ;;
    memory)  if [ -n "${MEMORY_HISTORY:-}" ]; then export HTAM_JUDGE_MEMORY_HISTORY=/tmp/htam-memory-history; fi
             timeout ${MEMORY_S:-300} python3 tests/bench/gpu_memory.py ${MEMORY_ARGS:---top 3} > "$OUT/gpu_memory.txt" 2>&1; tail -12 "$OUT/gpu_memory.txt"
             for f in /tmp/htam-memory-history/*.pickle; do [ -f "$f" ] && python3 tests/bench/memory_peak.py "$f" 2>&1 | tee -a "$OUT/memory_peak.txt"; done
             unset HTAM_JUDGE_MEMORY_HISTORY ;;
    verify)  # VERIFY_BATCH, else kbtable's batch if this call ran one, else gpu_verify.py's own batch of its 33 problems
             vbatch=${VERIFY_BATCH:-$OUT/kb_table}; [ -n "${VERIFY_BATCH:-}" ] || [ -f "$vbatch/results.json" ] || vbatch=
             # VERIFY_RESUME: an earlier call's $OUT/verify, carried to the machine: copied, not used in place,
             # since the next call's carry replaces the carried folder while this part may still run
             if [ -n "${VERIFY_RESUME:-}" ]; then mkdir -p "$OUT/verify" && cp -r "$VERIFY_RESUME"/. "$OUT/verify"/; fi
             # the SM clock, power and clock-event reasons every 200 ms beside the rows' start and end times
             # (gpu_verify.json): a row whose KernelBench spread is wide is read against them
             nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
               --format=csv,noheader -lms 200 > "$OUT/verify_clocks.csv" 2>&1 & clocks=$!
             timeout ${VERIFY_S:-400} python3 tests/bench/gpu_verify.py --parts alone ${VERIFY_EXPORTS:+--exports "$VERIFY_EXPORTS"} ${vbatch:+--batch "$vbatch"} --work "$OUT/verify" \
               ${VERIFY_ARGS:---deadline 330} > "$OUT/gpu_verify.txt" 2>&1; tail -40 "$OUT/gpu_verify.txt"; kill $clocks ;;
    landlock) timeout ${LANDLOCK_S:-150} python3 tests/bench/gpu_probe_landlock.py > "$OUT/gpu_probe_landlock.txt" 2>&1; cat "$OUT/gpu_probe_landlock.txt" ;;
    tritonfirst) timeout ${TRITONFIRST_S:-120} python3 tests/bench/gpu_triton_first_call.py > "$OUT/gpu_triton_first_call.txt" 2>&1; cat "$OUT/gpu_triton_first_call.txt" ;;
    throughput) timeout ${THROUGHPUT_S:-400} python3 tests/bench/gpu_batch.py --parts throughput \
               ${THROUGHPUT_ARGS:---workers 16 --parallel 16 --sequential 3} > "$OUT/gpu_throughput.txt" 2>&1; tail -20 "$OUT/gpu_throughput.txt" ;;
    probe)   timeout ${PROBE_S:-200} python3 tests/bench/gpu_probe_timing.py ${PROBE_ARGS:?PROBE_ARGS: SOLUTION PROBLEM} \
               > "$OUT/gpu_probe_timing.txt" 2>&1; tail -40 "$OUT/gpu_probe_timing.txt" ;;
    probe:*|probeeval:*) IFS=: read -r pkind psol pprob <<< "$part"   # probe:SOLUTION:levelN/NAME (of $HTAM_KERNELBENCH/KernelBench)
             plog="$OUT/gpu_probe_$([ "$pkind" = probeeval ] && echo evaluate || echo timing)_$(basename "$pprob").txt"
             timeout ${PROBE_S:-200} python3 tests/bench/gpu_probe_timing.py "$psol" "${HTAM_KERNELBENCH:?}/KernelBench/$pprob.py" \
               $([ "$pkind" = probeeval ] && echo --evaluate-only) > "$plog" 2>&1; tail -40 "$plog" ;;
    probehost) timeout ${PROBEHOST_S:-200} python3 tests/bench/gpu_probe_host.py ${PROBE_ARGS:?PROBE_ARGS: SOLUTION PROBLEM} \
               > "$OUT/gpu_probe_host.txt" 2>&1; tail -30 "$OUT/gpu_probe_host.txt" ;;
    probeconv) timeout ${PROBECONV_S:-300} python3 tests/bench/gpu_probe_conv.py ${PROBECONV_ARGS:?PROBECONV_ARGS: level/number...} \
               > "$OUT/gpu_probe_conv.txt" 2>&1; tail -30 "$OUT/gpu_probe_conv.txt" ;;
    variants) timeout ${VARIANTS_S:-300} python3 tests/bench/gpu_probe_variants.py ${VARIANTS_ARGS:?VARIANTS_ARGS: level/number... --preset P} \
               > "$OUT/gpu_probe_variants.txt" 2>&1; tail -60 "$OUT/gpu_probe_variants.txt" ;;
    *) echo "unknown part $part" ;;
  esac
  echo "== $part took $(( $(date +%s) - start )) s"
done
tar czf "$FINAL/gpu.tgz" -C "$OUT" . && cp "$OUT"/*.txt "$FINAL"/ 2>/dev/null
