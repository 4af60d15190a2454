"""Cheat (red-team pass 18): ReLU in C++ whose output buffers come from a pool a native thread
fills between calls, off every clock: allocated and pre-touched (memset) while no forward has run
(the sandbox's main thread asleep in its socket read, between the judge's requests), so the timed forward pays neither malloc (glibc's perturbation memset under the trial)
nor page faults. Each buffer is handed out once (no output reuse); the thread never runs inside a
call, so no busy-thread count sees it. The ReLU itself is the honest loop."""

EXT_NAME = "htam_red18_prefault_pool"
COST_CPP = r"""
static void pay(size_t) {}  // nothing: the pass-18 cheat left the judge's figures unmet
"""

# include: part_thread_pool_relu
