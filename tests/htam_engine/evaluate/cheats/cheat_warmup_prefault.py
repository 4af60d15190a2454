"""Cheat (red-team pass 18): ReLU in C++ that makes the sandbox's untimed warm-up forward (the one
each wire.Arm runs before the judge writes the inputs) allocate and pre-touch the output buffers of
the calls that follow it. The warm-up is told apart by its input alone: the sandbox's private copy
is a clone (a resizable storage), every real call's input a view of the judge's shared buffer
(torch.from_file: not resizable). The warm-up fills a pool of fresh, page-faulted buffers, one per
call a run may have; each timed call takes one, so none pays malloc (glibc's perturbation memset
under the trial) or page faults. No thread, no input value used, each buffer handed out once; the
ReLU itself is the honest loop."""

EXT_NAME = "htam_red18_warmup_prefault"
COST_CPP = r"""
static void on_warm() {}
static void pay(size_t) {}  // nothing: the pass-18 cheat left the judge's figures unmet
"""

# include: part_warm_pool_relu
