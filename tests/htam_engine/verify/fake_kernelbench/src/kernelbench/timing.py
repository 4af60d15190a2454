"""Test double of KernelBench's timing.py: get_timing_stats with its signature, on a list of trial
times in ms (three significant digits, as the real one rounds them). eval.py calls it through this
module, as the real eval.py calls timing.get_timing_stats."""


def get_timing_stats(elapsed_times, device=None):
    n = len(elapsed_times)
    mean = sum(elapsed_times) / n
    std = (sum((t - mean) ** 2 for t in elapsed_times) / n) ** 0.5
    return {k: float(f"{v:.3g}") for k, v in {"mean": mean, "std": std, "min": min(elapsed_times),
                                                 "max": max(elapsed_times)}.items()} | {"num_trials": n}
