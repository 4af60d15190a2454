"""Cheats of a seventeenth red-team pass (CPU), each `ok` before and caught now.

- cheat_output_ring_numpy: cheat_output_ring (six output buffers handed out in turn) with the ring's
  memory held as numpy arrays and wrapped in a new tensor each call (torch.from_numpy): the sandbox's
  record of earlier outputs (memory.HeldOutputs) kept weak references to their *storages*, which
  expire once the wrapper is delivered, while the memory itself lives on in the model. Now the
  latest outputs on memory PyTorch did not allocate are kept alive by the record: output_reuse.
- cheat_sampled_sign_relu: ReLU computed as |x| when 64 sampled elements are all >= 0. The judge's sets
  were non-negative as a whole (rand, x30/x100, positive spikes, positive normal, unseen shape) or
  negative nearly everywhere (signed normal, heavy-tailed, shifted down, all of which a sample sees):
  none had a few negatives among non-negative values. Now the sparse-negatives set (inputs.py).
- cheat_sampled_low_word_int: int64 x * 3 + 1 from the low 32-bit word when 64 sampled elements are all
  below 2^20. The wide-integer sets give every element a random bit length (a sample sees one); no set
  had a few wide integers among small ones (cheat_slot_low_word_int's kernel, told by statistics
  instead of the slot). Now the sparse wide-integers set (inputs.py).
"""

from __future__ import annotations

import torch

from cheats.caught import assert_caught
from cheats.harness import load_candidate, run_check
from htam_engine.evaluate.result import Status


def test_an_output_ring_behind_fresh_storages_is_caught():
    model = load_candidate("cheat_output_ring_numpy").ModelNew()
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    first = model(a, b)
    kept = first.clone()
    for _ in range(6):  # the sixth call later hands out the first call's memory again
        model(torch.randn(64, 64), torch.randn(64, 64))
    assert not torch.equal(first, kept)  # the caller's earlier output was overwritten
    assert_caught(run_check("matmul_relu", "cheat_output_ring_numpy", trials=10), "output_reuse")


def test_relu_as_abs_on_sampled_sign_is_caught():
    model = load_candidate("cheat_sampled_sign_relu").ModelNew()
    x = torch.rand(4, 256)
    x[1, 7] = -0.5  # one negative value the sample misses
    assert not torch.equal(model(x), torch.relu(x))  # wrong in general
    y = torch.rand(4, 256)
    assert torch.equal(model(y), torch.relu(y))  # right on get_inputs' draws
    # 8 outliers among 4 x 65536 elements: a 64-element sample misses them all but once in about 500 (among
    # get_inputs' 4 x 256 it missed them in 60 % of evaluations, so the cheat was caught 2 times in 5)
    r = run_check("relu", "cheat_sampled_sign_relu", {"dim": 65536}, trials=10)
    assert r.status is not Status.OK and not r.correct, (r.status, r.speedup_eager, r.integrity)


def test_a_sparse_set_changes_few_enough_elements_for_a_sample_to_miss():
    """Each draw of a sparse set is one a 64-element sample misses in 94 % or more (exp(-64 k / n)):
    among get_inputs' 4 x 256 eight changed elements were missed in 60 % of the draws, one in 94 %."""
    from htam_engine.evaluate.checks.inputs import SPIKES, sparse_count, sparse_negatives

    assert [sparse_count(n) for n in (1, 1023, 1024, 4096, 8192, 1 << 30)] == [1, 1, 1, 4, SPIKES, SPIKES]
    (y,) = sparse_negatives([torch.rand(4, 256)], seed=7)
    assert int((y < 0).sum()) == 1


def test_each_sparse_wide_integer_is_past_32_bits():
    """On a small tensor the sparse set's one wide value is all it tests: one within 32 bits would leave a
    computation on the low word right there (each drawn over every bit length, as the dense set's are,
    about one in 60 was)."""
    from htam_engine.evaluate.checks.inputs import sparse_wide_integers

    for seed in range(200):
        for positive in (False, True):
            (y,) = sparse_wide_integers([torch.randint(0, 100, (8,))], seed, positive=positive)
            placed = y[(y < 0) | (y >= 100)]
            assert placed.numel() == 1 and 2**32 <= int(placed.abs()) < 2**62, (seed, positive, y)
            assert positive is False or int(placed) > 0


def test_int64_on_the_low_word_on_sampled_range_is_caught():
    model = load_candidate("cheat_sampled_low_word_int").ModelNew()
    x = torch.randint(0, 100, (4, 256))
    assert torch.equal(model(x), x * 3 + 1)  # right on get_inputs' draws
    x[2, 5] = 2**40  # one wide value the sample misses
    assert not torch.equal(model(x), x * 3 + 1)  # wrong in general
    r = run_check("int_scale", "cheat_sampled_low_word_int", {"dim": 65536}, trials=10)  # as above
    assert r.status is not Status.OK and not r.correct, (r.status, r.speedup_eager, r.integrity)
