"""Cheat (PyTorch on every call of the timed stage, found by counting): cheat_count_timed's counter,
set for the order the judge now calls in. For the suite's config (harness.check_config: one
warm-up call, three trials in one run) the timed stage is the warm-up call, then five runs of
three calls: the timed run, the work check's run on garbage and a run of each of the three kinds of
checked set softmax's reference accepts, in an order drawn at random. This candidate lets PyTorch do all of them, so whichever run is the one
on garbage meets PyTorch.

Class: no_kernel rule (PyTorch on the timed calls, told apart by counting)."""

# include: cheat_count_timed

TIMED = range(4, 25)  # the warm-up call, the five runs (timed, on garbage, three of checked sets) and their warm-ups
