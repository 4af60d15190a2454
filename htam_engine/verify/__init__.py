"""Agreeing with KernelBench: an exported solution re-run through KernelBench's own
`eval_kernel_against_ref` (from a checkout, in a child process) beside htam's evaluation.

    checkout.find_checkout(path | None) -> KernelBenchCheckout   (--kernelbench, else HTAM_KERNELBENCH)
    settings.KernelBenchSettings                                  KernelBench's evaluation choices
    kernelbench.run_kernelbench(...) -> KernelBenchVerdict        its verdict, read back as JSON
    side_by_side.verify_solution(...) -> Verification             both verdicts and speedups
    exports.verify_batch(...)                                     every exported best of a batch

This package imports nothing at the top: kb_child runs as `python -m` in the child process,
which must not load htam's evaluation machinery beside KernelBench's.
"""
