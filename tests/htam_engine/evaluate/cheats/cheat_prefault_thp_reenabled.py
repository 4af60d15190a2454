"""Cheat (output memory touched before the call, the judge's figures met with huge pages turned back
on): cheat_prefault_thp_growth with, at each forward, transparent huge pages turned on again for the
sandbox (prctl PR_SET_THP_DISABLE, 0) before its huge-page region is touched: the sandbox turns them off
before any candidate code runs (checks.memory.map_big_blocks_afresh), so MADV_HUGEPAGE alone no longer
gives a 2 MiB page, and the growth of RssAnon is one 4 KiB page a touch.

Class: the harness's process setting undone (prefaulted_output: the judge reads THP_enabled from
/proc/PID/status after each run)."""

# include: cheat_prefault_thp_growth


class ModelNew(ModelNew):  # noqa: F811 - cheat_prefault_thp_growth's, huge pages turned back on first
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import ctypes

        ctypes.CDLL(None).prctl(41, 0, 0, 0, 0)  # PR_SET_THP_DISABLE off
        return super().forward(x)
