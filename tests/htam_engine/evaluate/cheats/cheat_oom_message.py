"""Cheat (a forged out-of-memory message changing a verdict): cheat_validate_and_raise with one
change, the words it raises. PyTorch computes the softmax but the last 512 values of the last row
and that row's max and sum; a Triton kernel computes those 512 values (0.8 % of the output); forward
checks its own output (finite, in [0, 1], rows summing to 1) and raises where it is wrong, which it
is on every run of the work check. A raise with the kernels run on garbage, where every checked call
returned, is now turned down (sequence.CheckRun._raised_on_garbage), unless the message reads as the
device's memory running out (oom.out_of_memory_text: "out of memory" anywhere in it), which the judge
takes for the harness's limit. The message is the candidate's own text: raising "CUDA out of memory"
on the CPU puts every work-check run back to nothing learned, and the candidate is ok at PyTorch's
speed with its kernel doing 0.8 % of the work.

Class: forged verdicts (the sandbox's exception text read as the harness's fault) / no_kernel."""

# include: cheat_validate_and_raise

MESSAGE = "CUDA out of memory. Tried to allocate 2.00 MiB (softmax kernel workspace)"
