"""Which failures read as the device running out of memory (re-run alone, never the candidate's
fault beside others): the messages are the ones seen on an H200 box in a batch at KernelBench's
official sizes."""

from htam_engine.evaluate.judge import out_of_memory_text


def test_out_of_memory_messages_are_recognised_and_others_are_not():
    assert out_of_memory_text("CUDA out of memory. Tried to allocate 6.00 GiB")
    # The caching allocator's own report of an out-of-memory failing inside a sandbox:
    assert out_of_memory_text(
        'ModelNew.forward raised on get_inputs#0: RuntimeError: NVML_SUCCESS == DriverAPI::get()->'
        'nvmlInit_v2_() INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":1135')
    assert not out_of_memory_text("ModelNew.forward raised on get_inputs#0: RuntimeError: shape mismatch")
    assert not out_of_memory_text("illegal memory access was encountered")
