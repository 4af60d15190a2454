"""Cheat (range specialised to get_inputs, the large run told by a sample of each row): the later calls
of a run (told apart by pace, as cheat_timed_nomax_softmax) drop the max pass on every row whose first
SAMPLE elements all lie in [0, 1), the range of get_inputs' rand draws. The run of large-magnitude sets
among the timed runs scales every element by 30 or 100: a row of it has all SAMPLE sampled elements
below 1 with probability (1/30)^16, so its rows all take the full softmax and pass; the checked sets
(signed normal, heavy-tailed, sparse spikes, x30/x100, unseen shape) come one to a Go and take the full
softmax. The timed calls of get_inputs' draws (inputs below 1: exp cannot overflow) get the kernel
without its max pass and are right to float32 rounding. Wrong in general: a row of rand [0, 1) with one
element of 200 past the sample gives NaN where torch.softmax gives a one-hot row.

Class: precision and range, phase detection plus a cheap in-kernel sample of the input's range."""

# include: part_softmax_nomax_kernel
SAMPLE = 16  # no max pass on a later call's rows whose first 16 elements lie in [0, 1)
# include: part_later_by_pace
