#!/usr/bin/env bash
# Every H200 figure of the README's "Measured figures" in one 30-minute device session, through
# gpu_detached.sh (the parts outlive one command's 10-minute limit):
#   bash tests/bench/gpu_session.sh start      starts the parts, returns after WAIT_S (default 560)
#   bash tests/bench/gpu_session.sh collect    waits up to WAIT_S more; call again until it ends
# The part limits below add up to about 27 minutes (1,620 s), the rest of the session being the machine's
# start; KernelBench comes from $HTAM_KERNELBENCH (default .kb/, a copy of its KernelBench/ and src/).
set -u
export HTAM_KERNELBENCH=${HTAM_KERNELBENCH:-$PWD/.kb}
export TESTS_S=${TESTS_S:-220} TESTS_ARGS=${TESTS_ARGS:-"tests/htam_engine/evaluate tests/faults tests/htam_engine/verify tests/htam_engine/propose"}
export MEMORY_S=${MEMORY_S:-150}
export KBTABLE_S=${KBTABLE_S:-550} KBTABLE_ARGS=${KBTABLE_ARGS:-"--steps 3 --trials 10 --deadline 450"}
export VERIFY_S=${VERIFY_S:-200} VERIFY_ARGS=${VERIFY_ARGS:-"--deadline 170"}
export ABLATION_S=${ABLATION_S:-300} ABLATION_ARGS=${ABLATION_ARGS:-"--arms full,random,flat --starts cold --trials 10 --concurrency 24 --deadline 240"}
export THROUGHPUT_S=${THROUGHPUT_S:-200} THROUGHPUT_ARGS=${THROUGHPUT_ARGS:-"--workers 16 --parallel 12 --sequential 2"}
exec bash "$(dirname "$0")/gpu_detached.sh" "${1:?start or collect}" tests memory kbtable verify ablation throughput
