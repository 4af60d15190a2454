"""One solution, two judges: KernelBench's eval_kernel_against_ref and htam's evaluation, with
KernelBench's choices (trials, seed, fp32) on both sides, their verdicts and speedups side by side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from htam_engine.evaluate.backend import resolve_backend
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.result import EvalResult
from htam_engine.families import Backend
from htam_engine.problems.model import Problem
from htam_engine.verify.checkout import KernelBenchCheckout
from htam_engine.verify.kernelbench import KernelBenchVerdict, run_kernelbench
from htam_engine.verify.settings import AGREEMENT, KernelBenchSettings

@dataclass(frozen=True, slots=True)
class Verification:
    solution: str  # its path, as given
    problem: str  # the problem's id
    device: str
    backend: Backend
    settings: KernelBenchSettings
    htam: EvalResult
    kernelbench: KernelBenchVerdict

    @property
    def htam_correct(self) -> bool:
        return self.htam.ok and self.htam.correct

    @property
    def speedup_gap(self) -> float | None:
        """(htam's speedup - KernelBench's) / KernelBench's, when both timed a correct kernel."""
        ours, theirs = self.htam.speedup_eager, self.kernelbench.speedup
        if not (self.htam_correct and ours and theirs):
            return None
        return (ours - theirs) / theirs

    @property
    def median_gap(self) -> float | None:
        """The same gap against KernelBench's medians (its trials, where they came back): a mean-only
        gap, such as 2/56's eager on an H100 (mean 5.59 ms, min 5.05, max 6.28), is told apart from
        one in every trial. Shown beside the gap; agreement stays judged on KernelBench's reported figure."""
        ours, theirs = self.htam.speedup_eager, self.kernelbench.median_speedup
        if not (self.htam_correct and ours and theirs):
            return None
        return (ours - theirs) / theirs

    @property
    def verdicts_agree(self) -> bool:
        return not self.kernelbench.error and self.htam_correct == self.kernelbench.correct

    @property
    def agrees(self) -> bool:
        """Same verdict and, for a correct kernel, speedups within AGREEMENT of each other."""
        if not self.verdicts_agree:
            return False
        gap = self.speedup_gap
        return not self.htam_correct or (gap is not None and abs(gap) <= AGREEMENT)

    def to_dict(self) -> dict[str, Any]:
        h = self.htam
        return {
            "solution": self.solution, "problem": self.problem, "device": self.device, "backend": self.backend.value,
            "settings": self.settings.to_dict(),
            "htam": {"status": h.status.value, "correct": self.htam_correct, "runtime_ms": h.runtime_ms,
                     "ref_runtime_ms": h.ref_runtime_ms, "speedup": h.speedup_eager,
                     "message": h.diagnostics.message, "result": h.to_dict()},
            "kernelbench": self.kernelbench.to_dict(),
            "speedup_gap": self.speedup_gap, "median_gap": self.median_gap, "verdicts_agree": self.verdicts_agree,
            "agrees": self.agrees,
            "agreement": AGREEMENT,
        }


def htam_config(device: str, settings: KernelBenchSettings) -> EvalConfig:
    """htam's evaluation with KernelBench's choices: its trial counts and seed; no torch.compile
    baseline (KernelBench times eager only). htam's tolerances and checks stay its own."""
    return EvalConfig(device=device, trials=settings.perf_trials, correctness_trials=settings.correct_trials,
                      seed=settings.seed, time_compile_baseline=False, timeout_s=settings.timeout_s)


def verify_solution(solution: str, code: str, problem: Problem, checkout: KernelBenchCheckout, device: str,
                    settings: KernelBenchSettings | None = None, on_stage: Callable[[str], None] | None = None) -> Verification:
    """KernelBench first (its failure to import the checkout stops here, exit 2), then htam."""
    from htam_engine.evaluate import evaluate

    settings = settings or KernelBenchSettings()
    backend = Backend(resolve_backend(code, None, device))
    if on_stage:
        on_stage("KernelBench's eval_kernel_against_ref")
    theirs = run_kernelbench(checkout, problem.source, code, backend, device, settings)
    if on_stage:
        on_stage("htam's evaluation")
    ours = evaluate(problem, code, htam_config(device, settings))
    return Verification(solution=solution, problem=problem.id, device=device, backend=backend, settings=settings,
                        htam=ours, kernelbench=theirs)
