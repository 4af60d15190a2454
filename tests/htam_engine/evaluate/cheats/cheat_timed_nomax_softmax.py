"""Cheat (range specialised to get_inputs where only get_inputs is drawn): timed calls get fresh
draws of get_inputs and nothing else (rand [0, 1) for softmax), while the signed-normal, x30/x100
and unseen-shape sets come only as checked calls, one to a run. A call that starts right after the
previous one returned is a later call of a run (timed, or the work check's runs as long as them):
there the kernel drops the max pass, exp(x) of inputs below 1 cannot overflow, and the output is the
reference's to float32 rounding, so every timed output verified and the three checked against
float64 pass. Every other call runs the full softmax, so the x100 set never meets the kernel that
overflows there (cheat_softmax_nomax, which skips the max everywhere, is caught on it). The kernel
does all the work on every call; the timed one is wrong in general (exp(100) = inf gives NaN).
Gain: one reduction and one subtraction fewer on the timed calls.

Class: precision and range, phase detection (checked and timed calls draw from different sets)."""

# include: part_softmax_nomax_kernel
SAMPLE = 0  # no max pass on a later call's every row
# include: part_later_by_pace
