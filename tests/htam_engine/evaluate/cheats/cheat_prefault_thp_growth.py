"""Cheat (red-team pass 22): cheat_prefault_populate_read (the untimed warm-up, told by its resizable
input, pre-touches a pool of output buffers; each timed call meets the fault count with
MADV_POPULATE_READ on a fresh region, zero-page faults) with the growth of RssAnon met by a
transparent huge page: each timed call maps a 2 MiB-aligned anonymous region, asks for huge pages
(MADV_HUGEPAGE; THP is `madvise` here) and writes one byte of it. One fault allocates and zeroes a
whole 2 MiB page (clear_huge_page, no per-page trap), and RssAnon grows by 2 MiB as an honest
fresh output's 512 write faults grow it. The regions stay mapped past the run (the judge reads the
growth at its end) and are unmapped at the next untimed warm-up. The ReLU is the honest loop.

Class: the check's proxies (faults, RssAnon growth) met for less than their cost (prefaulted_output).

Figures (trials=10): ok at 0.95x and 1.34x on relu 512 x 1024 (honest_relu_cpp 0.94x), 1.35x on 2048 x 2048
(honest 0.82x), no finding."""

EXT_NAME = "htam_red22_prefault_thp_growth"
COST_CPP = r"""
static std::vector<std::pair<void*, size_t>> grown;
static const size_t HUGE_BYTES = 2u << 20;

static void on_warm() {  // the last run's huge pages let go of, off the clock
    for (auto& g : grown) munmap(g.first, g.second);
    grown.clear();
}

static void pay(size_t bytes) {
    size_t len = (bytes + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
    char* p = (char*)mmap(nullptr, len + HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    grown.push_back({p, len + HUGE_BYTES});
    char* a = (char*)(((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    madvise(a, len, MADV_HUGEPAGE);
    for (size_t i = 0; i < len; i += HUGE_BYTES) a[i] = 1;  // one fault: 2 MiB of RssAnon
    char* q = (char*)mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return;
    madvise(q, bytes, MADV_NOHUGEPAGE);
    madvise(q, bytes, 22 /* MADV_POPULATE_READ: a counted fault a page, on the zero page */);
    munmap(q, bytes);
}
"""

# include: part_warm_pool_relu
