"""Cheat (red-team pass 21): cheat_prefault_populate_read with its counted faults taken by plain reads
(one load a page of a fresh anonymous mapping, a read fault each, mapping the shared zero page) rather
than madvise: no system call a filter could refuse. A read fault costs about 60 % of a write fault
into a fresh page on this box (240 us against 390 us for 2 MiB), MADV_POPULATE_READ 17 % (67 us).

Class: the check's proxy (the fault count) met for less than its cost (prefaulted_output)."""

EXT_NAME = "htam_red21_prefault_read_touch"
COST_CPP = r"""
static void on_warm() {}
static void pay(size_t bytes) {  // one minor fault a page, each only maps the zero page
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, bytes, MADV_NOHUGEPAGE);
    volatile char sink = 0;
    for (size_t off = 0; off < bytes; off += 4096) sink += ((const char*)p)[off];  // a read fault a page
    munmap(p, bytes);
}
"""

# include: part_warm_pool_relu
