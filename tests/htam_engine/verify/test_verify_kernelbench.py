"""KernelBench's verdict through its eval_kernel_against_ref in a child process: the settings it
is called with, its result read back, and every way it can fail to give one. On the CPU it runs
against a test double of a checkout (fake_kernelbench/, the real one needs CUDA); the real
checkout runs in the GPU tests."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from htam_engine.errors import InputError
from htam_engine.families import Backend
from htam_engine.verify.checkout import find_checkout
from htam_engine.verify.kernelbench import UnreadableResult, run_kernelbench, verdict_from
from htam_engine.verify.settings import KernelBenchSettings

FAKE = Path(__file__).parent / "fake_kernelbench"
PROBLEM = (Path(__file__).parents[1] / "loop" / "data" / "scale_relu.py").read_text()
HONEST = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(2.0 * x - 1.0, min=0.0)
"""
WRONG = HONEST.replace("min=0.0", "min=0.1")
QUICK = KernelBenchSettings(correct_trials=2, perf_trials=5)


def kb(solution: str, settings: KernelBenchSettings = QUICK, checkout=None):
    return run_kernelbench(checkout or find_checkout(FAKE), PROBLEM, solution, Backend.CUDA, "cpu", settings)


def test_kernelbench_gets_its_own_default_settings_and_its_verdict_comes_back():
    v = kb(HONEST, KernelBenchSettings())
    assert v.status == "correct" and v.compiled and v.correct and not v.error
    assert v.runtime_ms > 0 and v.ref_runtime_ms > 0 and v.speedup == pytest.approx(v.ref_runtime_ms / v.runtime_ms)
    assert v.runtime_stats["num_trials"] == 100 and v.tolerance == 1e-4
    called = v.metadata["double_called_with"]
    assert called == {"seed_num": 42, "num_correct_trials": 5, "num_perf_trials": 100, "measure_performance": True,
                      "timing_method": "cuda_event", "device": "cpu", "backend": "cuda", "precision": "torch.float32",
                      "check_for_excessive_speedup": True, "stood_in": called["stood_in"]}
    # KernelBench's package imports dotenv and litellm at the top: stood in, never installed
    assert {"dotenv", "litellm"} <= set(called["stood_in"])
    assert json.loads(json.dumps(v.to_dict()))["status"] == "correct"


def test_kernelbench_s_trial_times_come_back_beside_its_statistics():
    """A row that parts from htam is read against KernelBench's own trials (their median, their
    spread), which its result reduces to a mean: the times it computed its statistics from."""
    v = kb(HONEST)
    assert len(v.runtime_trials) == 5 and len(v.ref_runtime_trials) == 5
    assert sum(v.runtime_trials) / 5 == pytest.approx(v.runtime_ms, rel=5e-3)
    assert sum(v.ref_runtime_trials) / 5 == pytest.approx(v.ref_runtime_ms, rel=5e-3)
    assert json.loads(json.dumps(v.to_dict()))["ref_runtime_trials"] == list(v.ref_runtime_trials)


def test_a_crashed_evaluation_says_so():
    v = kb(HONEST + "# double: crash\n")
    assert v.status == "error" and "exited with status 3 without a result" in v.error and v.speedup is None


def test_a_hung_evaluation_is_killed_at_the_timeout():
    t0 = time.monotonic()
    v = kb(HONEST + "# double: hang\n", KernelBenchSettings(timeout_s=1))
    assert v.status == "error" and "did not finish in 1 s" in v.error
    assert time.monotonic() - t0 < 20


@pytest.fixture
def in_this_process(monkeypatch):
    """kb_child.evaluate run here: the stand-ins and the fake's modules leave with the test."""
    import sys

    from htam_engine.verify import kb_child

    monkeypatch.setattr(sys, "path", list(sys.path))
    names = (*kb_child.ALWAYS_STOOD_IN, *kb_child.STOOD_IN_WHERE_UNIMPORTABLE)
    before = {name: sys.modules.get(name) for name in names}
    yield
    for name in [n for n in sys.modules if n.split(".")[0] in ("kernelbench", "temp_module")]:
        del sys.modules[name]
    for name, module in before.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


def _child_answer(solution: str) -> dict:
    from htam_engine.verify import kb_child

    return kb_child.evaluate({"kernelbench_src": str(FAKE / "src"), "reference": PROBLEM, "solution": solution,
                              "backend": "cuda", "device": "cpu", "settings": QUICK.to_dict()})


@pytest.mark.parametrize("solution,status,words", [
    (WRONG, "incorrect", '"correctness_issue": "Output mismatch"'),
    ("import torch\nraise ImportError('no such kernel module')\n", "compile_error", "no such kernel module"),
    (HONEST + "# double: raise\n", "error", "eval_kernel_against_ref raised AssertionError: CUDA is not available"),
    (HONEST + "# double: none\n", "error", "returned no result"),
], ids=["wrong", "does not load", "raises", "returns None"])
def test_every_answer_of_kernelbench_s_becomes_a_verdict(in_this_process, solution, status, words):
    v = verdict_from(json.loads(json.dumps(_child_answer(solution))))
    assert v.status == status and v.speedup is None
    assert words in v.error + json.dumps(v.metadata)


def test_a_checkout_that_cannot_be_imported_is_bad_input(tmp_path):
    broken = tmp_path / "kb"
    (broken / "src" / "kernelbench").mkdir(parents=True)
    (broken / "src" / "kernelbench" / "__init__.py").write_text("")
    (broken / "src" / "kernelbench" / "eval.py").write_text("import pydantic_that_is_not_installed\n")
    with pytest.raises(InputError, match="cannot import KernelBench's evaluation .*pydantic_that_is_not_installed"):
        kb(HONEST, checkout=find_checkout(broken))


@pytest.mark.parametrize("doc", [
    [], {"result": "yes"}, {"result": {"compiled": 1, "correctness": True}},
    {"result": {"compiled": True, "correctness": True, "runtime": "fast"}},
    {"result": {"compiled": True, "correctness": True, "metadata": []}},
])
def test_a_result_without_kernelbench_s_fields_and_types_is_unreadable(doc):
    with pytest.raises(UnreadableResult):
        verdict_from(doc)


def test_kernelbench_s_minus_one_means_not_timed():
    v = verdict_from({"result": {"compiled": True, "correctness": True, "runtime": -1.0, "ref_runtime": -1.0,
                                 "runtime_stats": {"mean": float("nan")}, "metadata": {}}})
    assert v.correct and v.runtime_ms is None and v.speedup is None and v.runtime_stats == {}


def test_the_checkout_is_named_by_flag_or_environment(monkeypatch, tmp_path):
    from htam_engine.errors import UsageError

    monkeypatch.delenv("HTAM_KERNELBENCH", raising=False)
    with pytest.raises(UsageError, match="pass --kernelbench PATH or set HTAM_KERNELBENCH"):
        find_checkout()
    with pytest.raises(UsageError, match="not a KernelBench checkout"):
        find_checkout(tmp_path)
    monkeypatch.setenv("HTAM_KERNELBENCH", str(FAKE))
    assert find_checkout().root == FAKE.resolve() and find_checkout().src == (FAKE / "src").resolve()
    # the problems folder inside a checkout names the checkout (HTAM_KERNELBENCH may point at either)
    (tmp_path / "kb" / "src" / "kernelbench").mkdir(parents=True)
    (tmp_path / "kb" / "src" / "kernelbench" / "eval.py").write_text("")
    (tmp_path / "kb" / "KernelBench").mkdir()
    assert find_checkout(tmp_path / "kb" / "KernelBench").root == (tmp_path / "kb").resolve()


def test_a_module_installed_without_what_it_needs_is_stood_in(in_this_process, tmp_path, monkeypatch):
    """On the GPU machine openai 3.63 was installed without httpx2: KernelBench's package import
    failed before any evaluation (ModuleNotFoundError: No module named 'httpx2'). A module KernelBench
    imports only to generate kernels is stood in when it does not import, not only when missing."""
    import sys

    from htam_engine.verify import kb_child

    (tmp_path / "needs_more.py").write_text("import a_module_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(kb_child, "STOOD_IN_WHERE_UNIMPORTABLE", ("needs_more",))
    monkeypatch.delitem(sys.modules, "needs_more", raising=False)
    assert "needs_more" in kb_child.install_stand_ins()
    assert "stand-in" in (sys.modules.pop("needs_more").__doc__ or "")
