"""Correctness and integrity checks for candidate kernels (issue 2).

Interface used by the evaluation worker (harness-core):

    static_findings(code: str, backend: str) -> list[Finding]
        In the parent, before compiling. Findings with severity "reject" justify
        skipping the compile (status REJECTED); "warn" ones are reported only.

    install_guards(device: str) -> Guards
        In the worker, BEFORE any candidate code is imported (idempotent: a second call
        returns the same Guards). Snapshots timers, torch.cuda sync/Event/Stream, torch's
        global settings and the harness's own functions; wraps torch.utils.cpp_extension's
        module loader (so load_inline/load modules count their calls) and Triton's launch
        (JITFunction.run / InterpretedFunction.run). Patch load_inline yourself (compile
        cache) BEFORE calling install_guards: the guards wrap whatever is there.
        Guards.kernel_calls: custom-kernel calls counted so far (extension functions and
        Triton launches; operators an extension registers, called as torch.ops.ns.op, are
        counted by check_candidate on a rerun when nothing else ran).
        Guards.verify() -> list[Finding]: call after timing too (timers/sync untouched,
        no stray threads or busy side streams).
        Guards.trust_current_threads(): threads alive now are the harness's own.
        Threads started with no candidate code on the stack (the worker's helpers, torch's
        compile pool, a compile of the reference) are trusted automatically; torch wrapping
        its own functions (dynamo, on a torch.compile baseline) is not tampering.
        Guards.trusted(): a `with` block for harness work whose side effects are accepted.
        Guards.uninstall(): restore everything (in-process tests).
        A worker whose verify() reported anything should be replaced, not reused.

    check_candidate(ctx: CheckContext) -> CheckReport
        In the worker, after the candidate module imported. Builds Model and ModelNew
        under the same seed, runs correctness on several input sets (fresh get_inputs,
        signed-normal, heavy-tailed for tiny outputs, the unseen shape) and every runtime
        integrity rule; returns status OK / INCORRECT / REJECTED / RUNTIME_ERROR
        (COMPILE_ERROR when a build fails at construction or first launch), the models to
        time and a fresh input set for timing. Stops at the first reject-level finding.
        On the CPU, glibc's malloc perturbation is on only during the candidate's calls.

    recheck_after_timing(ctx: CheckContext, report: CheckReport) -> list[Finding]
        In the worker, after timing: one more checked call on fresh inputs with the same
        models. A candidate that behaves for its first calls and then serves cached or
        stale results (the timing loop runs it far more often) shows up here as
        "changed_after_timing" / "no_kernel" / "caching" findings (severity reject).
        Timing itself should also refill its input buffers with new values between
        trials (untimed; inputs.refill_in_place) so a content-keyed cache never hits.
"""

from htam_engine.evaluate.checks.candidate import check_candidate, recheck_after_timing
from htam_engine.evaluate.checks.context import CheckContext, CheckReport
from htam_engine.evaluate.checks.guards import Guards, install_guards
from htam_engine.evaluate.checks.static import static_findings

__all__ = ["CheckContext", "CheckReport", "Guards", "check_candidate", "install_guards", "recheck_after_timing",
           "static_findings"]
