"""Cheat (red-team pass 21): cheat_warmup_prefault (the untimed warm-up, told by its resizable input,
allocates and pre-touches the output buffers of the calls that follow) with the page faults the judge
counts paid for cheaply: every timed call maps a fresh anonymous region as large as its output and
asks the kernel to populate it for reading (madvise MADV_POPULATE_READ). Each page of it is one minor
fault (get_user_pages goes through handle_mm_fault, which counts min_flt) that maps the shared zero
page: no page allocated, none zeroed, no trap. The count per call matches an honest fresh output's;
the cost is a fraction of it. The ReLU itself is the honest loop, each buffer handed out once.

Class: a check on a proxy (the fault count) met without the cost it stands for (prefaulted_output)."""

EXT_NAME = "htam_red21_prefault_populate_read"
COST_CPP = r"""
static void on_warm() {}
static void pay(size_t bytes) {  // one minor fault a page, each only maps the zero page
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, bytes, MADV_NOHUGEPAGE);
    madvise(p, bytes, 22 /* MADV_POPULATE_READ */);
    munmap(p, bytes);
}
"""

# include: part_warm_pool_relu
