"""State construction: speedup buckets, status vocabulary, similarity, bottleneck estimate."""

import pytest

from htam_engine.evaluate.result import Status
from htam_engine.families import Bottleneck, Family
from htam_engine.memory import estimate_bottleneck, make_state, similarity, speedup_bucket
from htam_engine.problems.model import Problem, TensorSpec


@pytest.mark.parametrize("x,bucket", [(None, "none"), (0.2, "<0.5"), (0.5, "0.5-1"), (0.99, "0.5-1"),
                                      (1.0, "1-1.5"), (1.7, "1.5-2"), (2.0, ">2"), (float("nan"), "none")])
def test_speedup_buckets(x, bucket):
    assert speedup_bucket(x) == bucket


def test_make_state_maps_ok_to_faster_or_slower():
    assert make_state(Status.OK, "elementwise", "cuda", "memory", 1.4).status == "faster"
    assert make_state("ok", Family.ELEMENTWISE, "cuda", Bottleneck.MEMORY, 0.8).status == "slower"
    s = make_state("compile_error", "reduction", "cpp", "unknown", None)
    assert (s.status, s.family, s.speedup_bucket) == ("compile_error", Family.REDUCTION, "none")
    assert s.key() == "compile_error|reduction|unknown|none"


def test_similarity_is_one_for_equal_states_and_partial_for_two_failures():
    a = make_state("compile_error", "reduction", "cpp", "memory", None)
    b = make_state("incorrect", "reduction", "cpp", "memory", None)
    c = make_state("ok", "matmul", "cuda", "compute", 3.0)
    assert similarity(a, a) == pytest.approx(1.0)
    assert 0.5 < similarity(a, b) < 1.0
    assert similarity(a, c) == 0.0


def _problem(family, *shapes):
    return Problem(id="p", name="p", source="", family=family, inputs=[TensorSpec(list(s), "float32") for s in shapes])


def test_bottleneck_estimate_from_bytes_and_flops():
    assert estimate_bottleneck(_problem(Family.ELEMENTWISE, (4096, 4096)), None, "cuda") is Bottleneck.MEMORY
    assert estimate_bottleneck(_problem(Family.MATMUL, (4096, 4096), (4096, 4096)), None, "cuda") is Bottleneck.COMPUTE
    assert estimate_bottleneck(_problem(Family.ELEMENTWISE, (16, 16)), None, "cuda") is Bottleneck.LAUNCH
    assert estimate_bottleneck(_problem(Family.ELEMENTWISE), None, "cpu") is Bottleneck.UNKNOWN
    # a measured runtime within a few launch costs means launch-bound whatever the counts say
    assert estimate_bottleneck(_problem(Family.ELEMENTWISE, (1 << 22,)), 0.005, "cuda") is Bottleneck.LAUNCH
