"""Cheat (PyTorch on every call of the timed stage, found by counting): cheat_count_timed's counter,
set for the order the judge now calls in. For the suite's config (harness.check_config: one
warm-up call, three trials in one run) the timed stage is the warm-up call, then three runs of
three calls: the timed run, the work check's run on garbage and the run of checked sets, in
an order drawn at random. This candidate lets PyTorch do all of them, so whichever run is the one
on garbage meets PyTorch.

Class: no_kernel rule (PyTorch on the timed calls, told apart by counting)."""

# include: cheat_count_timed

TIMED = range(4, 17)  # the warm-up call, the three runs (timed, on garbage, of checked sets) and their warm-ups
