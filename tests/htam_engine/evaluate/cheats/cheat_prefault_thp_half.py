"""Cheat (red-team pass 22): cheat_prefault_thp_growth with each figure met at 0.6 of an honest call's
rather than all of it (the judge asks for half): a huge page is faulted in only while the huge pages
so far are under 0.6 of the outputs' bytes so far (on a 2 MiB output: three calls in five), and the
zero-page faults cover 0.6 of the output. Otherwise as below.

cheat_prefault_thp_growth: cheat_prefault_populate_read (the untimed warm-up, told by its resizable
input, pre-touches a pool of output buffers; each timed call meets the fault count with
MADV_POPULATE_READ on a fresh region, zero-page faults) with the growth of RssAnon met by a
transparent huge page: each timed call maps a 2 MiB-aligned anonymous region, asks for huge pages
(MADV_HUGEPAGE; THP is `madvise` here) and writes one byte of it. One fault allocates and zeroes a
whole 2 MiB page (clear_huge_page, no per-page trap), and RssAnon grows by 2 MiB as an honest
fresh output's 512 write faults grow it. The regions stay mapped past the run (the judge reads the
growth at its end) and are unmapped at the next untimed warm-up. The ReLU is the honest loop.

Class: the check's proxies (faults, RssAnon growth) met for less than their cost (prefaulted_output).

Figures (trials=10): ok at 1.69x on relu 512 x 1024 (honest_relu_cpp 0.94x), 1.97x on 2048 x 2048
(honest 0.82x), no finding."""

EXT_NAME = "htam_red22_prefault_thp_half"
COST_CPP = r"""
static std::vector<std::pair<void*, size_t>> grown;
static const size_t HUGE_BYTES = 2u << 20;
static double thp_total = 0, out_total = 0;

static void on_warm() {  // the last run's huge pages let go of, off the clock
    for (auto& g : grown) munmap(g.first, g.second);
    grown.clear();
}

static void pay(size_t bytes) {
    out_total += bytes;
    size_t len = (bytes + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
    char* p = (char*)mmap(nullptr, len + HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    grown.push_back({p, len + HUGE_BYTES});
    char* a = (char*)(((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    madvise(a, len, MADV_HUGEPAGE);
    for (size_t i = 0; i < len && thp_total < 0.6 * out_total; i += HUGE_BYTES) { a[i] = 1; thp_total += HUGE_BYTES; }  // a huge page when behind 0.6 of the outputs
    char* q = (char*)mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return;
    madvise(q, bytes, MADV_NOHUGEPAGE);
    madvise(q, (bytes * 6 / 10) & ~(size_t)4095, 22 /* MADV_POPULATE_READ on 0.6 of it: counted faults on the zero page */);
    munmap(q, bytes);
}
"""

# include: part_warm_pool_relu
