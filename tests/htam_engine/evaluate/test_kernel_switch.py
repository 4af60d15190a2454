"""kernel_switch's garbage run, piece by piece: telling a copy from work, and garbage for every dtype."""

from __future__ import annotations

import pytest
import torch

from htam_engine.evaluate import kernel_switch as ks
from htam_engine.evaluate.tensor_bits import bits_of


def garbage(n: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)) * 3 + 2


@pytest.mark.parametrize("piece", [ks.GARBAGE_PIECE_ELEMENTS, 7])  # looked for a piece at a time
def test_a_copy_of_all_of_a_source_a_run_of_it_or_a_gather_from_it_is_found(piece, monkeypatch):
    monkeypatch.setattr(ks, "GARBAGE_PIECE_ELEMENTS", piece)
    src = garbage(1000)
    bits = bits_of
    assert ks._copied_from(bits(src.clone()), bits(src), True) == slice(0, 1000)
    assert ks._copied_from(bits(src[10:510].clone()), bits(src), True) == slice(10, 510)
    places = torch.randperm(1000, generator=torch.Generator().manual_seed(1))[:300]
    assert torch.equal(ks._copied_from(bits(src[places]), bits(src), True), places)


def test_values_computed_from_a_source_are_no_copy():
    src = garbage(1000)
    bits = bits_of
    assert ks._copied_from(bits(torch.relu(src)), bits(src), True) is None  # its negatives became 0
    assert ks._copied_from(bits(src * 1.0001), bits(src), True) is None
    ints = torch.randint(0, 5, (1000,), generator=torch.Generator().manual_seed(2))
    shuffled = ints[torch.randperm(1000)]
    assert ks._copied_from(bits(shuffled), bits(ints), False) is None  # few values: no gather of integers


def test_a_copy_gets_the_real_values_from_the_same_places_and_work_keeps_its_garbage():
    real_src, real_dst = torch.arange(8.0), torch.zeros(8)
    src, copied, computed = garbage(8), torch.empty(8), torch.empty(8)
    copied.copy_(src.flip(0))
    computed.copy_(src * 2)
    tensors, kept = [src, copied, computed], [real_src, real_dst, real_dst]
    ks._copies_made_real(tensors, kept, unwritten=[True, False, False])
    assert torch.equal(copied, real_src.flip(0))
    assert torch.equal(computed, src * 2)


def test_garbage_is_drawn_for_a_dtype_torch_lends_few_operations_and_compared_by_bits():
    flag = torch.zeros(4, dtype=torch.uint32)
    recipe, states = ks._garbage_recipe(flag), []
    ks._draw(flag, recipe, states)
    assert ks._still_garbage(flag, recipe, states)
    flag[0] = 1
    assert not ks._still_garbage(flag, recipe, states)


def test_a_nan_left_where_garbage_was_nan_is_still_garbage():
    t = torch.zeros(4096, dtype=torch.float8_e4m3fn)
    recipe, states = ks._garbage_recipe(t), []  # random bits: 2 patterns of 256 are NaN
    ks._draw(t, recipe, states)
    assert torch.isnan(t.float()).any()  # so a comparison by value would call it written
    assert ks._still_garbage(t, recipe, states)


def test_an_extension_library_naming_a_redispatch_is_refused(tmp_path):
    """A library that calls operators below the Python dispatch key, or a native kernel directly,
    is refused at import; one that names none of those loads."""
    import types

    hidden, plain = tmp_path / "hidden.so", tmp_path / "plain.so"
    hidden.write_bytes(b"\x7fELF...._ZN2at4_ops8mse_loss10redispatchEN3c1014DispatchKeySet...")
    plain.write_bytes(b"\x7fELF...._ZN2at8internal15invoke_parallel...")
    with pytest.raises(ks.HiddenOperators, match="redispatch"):
        ks._refuse_hidden_operators(types.SimpleNamespace(__file__=str(hidden), __name__="hidden"))
    ks._refuse_hidden_operators(types.SimpleNamespace(__file__=str(plain), __name__="plain"))
