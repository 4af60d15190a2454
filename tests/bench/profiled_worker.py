"""A worker wrapper for HTAM_WORKER_WRAPPER that profiles the whole worker with cProfile.

    HTAM_WORKER_WRAPPER="python3 tests/bench/profiled_worker.py" HTAM_PROFILE_OUT=DIR ...

It runs the module named after -m in its own process (so the worker keeps its pipes and its
parent) and writes DIR/worker-<pid>.prof when the worker exits.
"""

import cProfile
import os
import runpy
import sys

module = sys.argv[sys.argv.index("-m") + 1]
sys.argv = [module]
profile = cProfile.Profile()
try:
    profile.runcall(runpy.run_module, module, run_name="__main__", alter_sys=True)
except SystemExit:
    pass
finally:
    profile.dump_stats(os.path.join(os.environ.get("HTAM_PROFILE_OUT", "."), f"worker-{os.getpid()}.prof"))
