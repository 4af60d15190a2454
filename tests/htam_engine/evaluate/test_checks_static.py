"""static_findings: what a read of the candidate's source flags before anything compiles."""

from __future__ import annotations

import pytest

from cheats.harness import candidate_path
from htam_engine.evaluate.checks import static_findings

TRITON_HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n    pass\n"


def rules(code: str, backend: str = "triton") -> dict[str, str]:
    return {f.rule: f.severity for f in static_findings(code, backend)}


@pytest.mark.parametrize("name,backend", [("honest_relu_triton", "triton"), ("honest_relu_cpp", "cpp"),
                                          ("honest_softmax", "triton"), ("honest_mse", "triton")])
def test_honest_candidates_have_no_findings(name, backend):
    assert static_findings(candidate_path(name).read_text(), backend) == []


def test_source_without_any_kernel_is_rejected():
    code = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    assert rules(code, "cpp") == {"no_kernel": "reject"}
    assert "no custom kernel" in static_findings(code, "cpp")[0].message


def test_cuda_backend_without_a_global_kernel_is_a_warning():
    code = ("from torch.utils.cpp_extension import load_inline\n"
            "m = load_inline(name='x', cpp_sources='int f(){return 1;}', functions=['f'])\n"
            "class ModelNew:\n    pass\n")
    assert rules(code, "cuda") == {"no_kernel": "warn"}
    assert rules(code.replace("int f()", "__global__ void g(){} int f()"), "cuda") == {}


@pytest.mark.parametrize("line,rule", [
    ("time.perf_counter = lambda: 0.0", "monkey_patch"),
    ("torch.cuda.synchronize = lambda: None", "monkey_patch"),
    ("setattr(torch.cuda.Event, 'elapsed_time', lambda *a: 0.0)", "monkey_patch"),
    ("T.cuda.Event.elapsed_time = None", "monkey_patch"),
    ("torch.backends.cuda.matmul.allow_tf32 = True", "global_setting"),
    ("torch.set_num_threads(1)", "global_setting"),
    ("x = gc.get_objects()", "harness_memory"),
    ("f = inspect.stack()", "frame_walk"),
    ("f = sys._getframe(1)", "frame_walk"),
    ("g = frame.f_back.f_globals", "frame_walk"),
    ("sys.settrace(lambda *a: None)", "tracing"),
    ("v = ctypes.c_float.from_address(123)", "foreign_memory"),
    ("b = ctypes.string_at(1, 8)", "foreign_memory"),
    ("from htam_engine.evaluate import timing", "harness_import"),
    ("m = __import__('htam_engine.evaluate')", "harness_import"),
])
def test_tampering_and_snooping_patterns_are_rejected(line, rule):
    code = TRITON_HEAD + "import time, gc, inspect, sys, ctypes\nimport torch as T\n" + line + "\n"
    found = rules(code)
    assert found.get(rule) == "reject", found
    finding = next(f for f in static_findings(code, "triton") if f.rule == rule)
    assert finding.message.startswith("line ")  # says where


@pytest.mark.parametrize("line,rule", [
    ("s = torch.cuda.Stream()", "side_stream"),
    ("g = torch.cuda.CUDAGraph()", "cuda_graph"),
    ("t = threading.Thread(target=print)", "background_thread"),
    ("import concurrent.futures", "background_thread"),
    ("os.environ['X'] = '1'", "environment"),
])
def test_risky_but_legitimate_constructs_are_warnings(line, rule):
    code = TRITON_HEAD + "import os, threading\n" + line + "\n"
    assert rules(code).get(rule) == "warn"


def test_local_names_and_attributes_of_own_objects_are_not_flagged():
    code = TRITON_HEAD + (
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.time = 0\n"
        "        time = object()\n"
        "        self.cache = {}\n"
    )
    assert rules(code) == {}


def test_unparsable_source_is_left_to_the_import_stage():
    assert static_findings("def broken(:\n", "triton") == []


@pytest.mark.parametrize("tail", [
    "",  # no ModelNew at all
    "class ModelOld(torch.nn.Module):\n    pass\n",
    "def make():\n    class ModelNew(torch.nn.Module):\n        pass\n    return ModelNew\n",  # only inside a function
])
def test_a_source_with_no_module_level_model_new_is_rejected_before_any_build(tail):
    found = {f.rule: f for f in static_findings(TRITON_HEAD + tail, "triton")}
    assert found["no_model_new"].severity == "reject" and "ModelNew" in found["no_model_new"].message


@pytest.mark.parametrize("tail", [
    "class ModelNew(torch.nn.Module):\n    pass\n",
    "if True:\n    class ModelNew(torch.nn.Module):\n        pass\n",
    "ModelNew = torch.nn.Identity\n",
    "from somewhere import ModelNew\n",
    "from somewhere import *\n",
])
def test_model_new_bound_at_module_level_in_any_way_passes(tail):
    assert "no_model_new" not in rules(TRITON_HEAD + tail)
