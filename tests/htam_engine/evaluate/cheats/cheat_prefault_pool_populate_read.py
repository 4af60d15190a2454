"""Cheat (red-team pass 21): cheat_prefault_pool (a native thread allocates and pre-touches the output
buffers while the sandbox's main thread sleeps between the judge's requests: rejected by the fault
count, prefaulted_output) with the count met as in cheat_prefault_populate_read: a call served from
the pool maps a fresh read-only region of its output's size and populates it (MADV_POPULATE_READ),
one counted minor fault a page on the zero page. No warm-up told apart: closing the warm-up's tell
(its resizable input) leaves this one; only the fault count stood against it.

Class: the check's proxy (the fault count) met for less than its cost (prefaulted_output)."""

EXT_NAME = "htam_red21_prefault_pool_populate_read"
COST_CPP = r"""
static void pay(size_t bytes) {  // one minor fault a page, each only maps the zero page
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, bytes, MADV_NOHUGEPAGE);
    madvise(p, bytes, 22 /* MADV_POPULATE_READ */);
    munmap(p, bytes);
}
"""

# include: part_thread_pool_relu
