"""Resource hygiene: a 60-step headless session keeps its memory flat and leaves no
temporary files or processes behind (tests/bench/soak_500.py runs the 500-step version)."""

from __future__ import annotations

from fault_soak import soak

from htam_engine.session import load_session

STEPS = 60
FIRST, LAST = 15, 60
# Growth allowed between the checkpoints: the session's own records (kilobytes a step) and
# allocator noise, far below what a leak of candidates, modules or results would add.
GROWTH_MB = 40.0
KEPT = {"memory.htgbank", "memory.htgbank.lock", "soak.htam"}


def test_long_session_keeps_memory_flat_and_leaves_no_temp_files(tmp_path, figures):
    r = soak(STEPS, tmp_path, (FIRST, LAST))
    ok = False
    try:
        assert r.exit_code == 0, r.stderr_tail
        assert r.steps_done == STEPS and len(load_session(tmp_path / "sessions" / "soak.htam").steps) == STEPS
        assert set(r.rss_mb) == {FIRST, LAST}, (r.rss_mb, r.stderr_tail)
        growth = r.rss_mb[LAST] - r.rss_mb[FIRST]
        assert growth < GROWTH_MB, f"htam grew {growth:.1f} MB from step {FIRST} to {LAST}: {r.rss_mb}"
        assert r.tmp_after == r.tmp_before, f"left in TMPDIR: {sorted(set(r.tmp_after) - set(r.tmp_before))}"
        # the session, the bank and the bank's lock sidecar (kept by design); no temp files of saves
        assert {"memory.htgbank", "soak.htam"} <= set(r.session_dir_after) <= KEPT, r.session_dir_after
        assert not r.leftover_pids, r.leftover_pids
        ok = True
    finally:
        figures.add("long session (memory, temp files)", tried=1, survived=int(ok),
                    note=f"{STEPS} steps: htam RSS {r.rss_mb.get(FIRST, 0):.0f} MB at step {FIRST}, "
                         f"{r.rss_mb.get(LAST, 0):.0f} MB at step {LAST}; {r.wall_s:.0f} s")
