"""Which failures read as the device running out of memory, so an evaluation that failed beside
others runs again with the device alone (never the candidate's fault for the memory others held):
the messages are the ones seen on an H200 box in a batch at KernelBench's official sizes."""

from htam_engine.evaluate.judge import worth_running_alone
from htam_engine.evaluate.oom import is_out_of_memory, out_of_memory_text
from htam_engine.evaluate.result import EvalResult, Status

NVML_ASSERT = ('ModelNew.forward raised on get_inputs#0: RuntimeError: NVML_SUCCESS == DriverAPI::get()->'
               'nvmlInit_v2_() INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":1135')


def _failed(status: Status, message: str) -> EvalResult:
    r = EvalResult(status=status, device="cuda")
    r.diagnostics.message = message
    return r


def test_out_of_memory_messages_are_recognised_and_others_are_not():
    assert out_of_memory_text("CUDA out of memory. Tried to allocate 6.00 GiB")
    assert out_of_memory_text(NVML_ASSERT)  # the allocator's own report of an out-of-memory failing
    assert not out_of_memory_text("ModelNew.forward raised on get_inputs#0: RuntimeError: shape mismatch")
    assert not out_of_memory_text("illegal memory access was encountered")


def test_the_nvml_assert_of_the_allocator_is_an_out_of_memory_and_runs_again_alone():
    """The exact text a sandbox's allocator failed with beside other evaluations on the H200."""
    seen = ("NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at "
            "CUDACachingAllocator.cpp")
    for message in (seen, seen.split(" at ")[0], f"ModelNew.forward raised on get_inputs#0: RuntimeError: {seen}"):
        assert out_of_memory_text(message), message
        assert is_out_of_memory(RuntimeError(message))
        assert worth_running_alone(_failed(Status.RUNTIME_ERROR, message))  # not the candidate's fault
    assert not out_of_memory_text("NVML_SUCCESS == r INTERNAL ASSERT FAILED at nvml.cpp")  # not the allocator


def test_harness_failures_and_a_candidates_out_of_memory_run_again_alone_and_nothing_else():
    assert worth_running_alone(_failed(Status.HARNESS_ERROR, "the judge ran out of GPU memory: it needs 84.0 GiB"
                                                             " on cuda, the device has 139.8 GiB"))
    assert worth_running_alone(_failed(Status.HARNESS_ERROR, "the reference sandbox failed: the sandbox died "
                                                             "during baseline: exited with status 1"))
    assert worth_running_alone(_failed(Status.RUNTIME_ERROR, NVML_ASSERT))
    assert not worth_running_alone(_failed(Status.RUNTIME_ERROR, "the sandbox died during check: killed by "
                                                                 "signal 11"))  # the candidate's crash
    assert not worth_running_alone(_failed(Status.INCORRECT, "output mismatch: CUDA out of memory in a name"))
    assert not worth_running_alone(EvalResult(status=Status.OK, device="cuda"))
