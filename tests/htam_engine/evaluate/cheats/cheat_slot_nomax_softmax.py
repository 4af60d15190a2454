"""Cheat (range specialised to get_inputs; a run's later calls told by the input's buffer slot, no
clock, no sample): call k of a run is staged in shared slot k, checked calls in slot 0 (the first
call's) or a private copy, so a page-aligned input at another address than the first call's is a later
call of a run; there the kernel drops its max pass on every row. Wrong in general: exp(100) overflows
on a x100 row (NaN), which the run of large-magnitude sets among the timed runs, staged in the same
slots, brings.

Class: precision and range, phase detection by buffer address."""

# include: part_softmax_nomax_kernel
SAMPLE = 0  # no max pass on a later call's every row
# include: part_later_by_slot
