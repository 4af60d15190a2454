"""checks/rounded.py: a float32 output computed from operands rounded to float16/TF32 or bfloat16 is
`lower_precision` even where its error averages out under the precision floor (positive terms of a
long sum); honest float32 outputs, and noise of the same size, are not."""

from __future__ import annotations

import torch

from htam_engine.evaluate.checks.observe import Observations, check_precision
from htam_engine.evaluate.checks.rounded import ROUNDINGS, Operands, check_rounded_operands, operand_sets, round_mantissa
from htam_engine.evaluate.reference import ReferenceModel


class _Product(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(1024, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def _unit_range(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(32, 1024, generator=g), torch.rand(1024, 32, generator=g)]


class _CountingRuns(ReferenceModel):
    """The judge's reference, counting the rounded runs it is asked for."""

    runs = 0

    def rounded(self, *args):
        self.runs += 1
        return super().rounded(*args)


def _judge(model: torch.nn.Module, inputs: list[torch.Tensor], out: torch.Tensor,
           under_the_floor: bool = False) -> tuple[set[str], int]:
    """(the rules found, how many rounded runs were made) for `out` as a candidate's.
    under_the_floor: the precision check alone must find nothing (so what is found is this rule's)."""
    ref = _CountingRuns(lambda: model, [], 0, "cpu")
    exact, ref_out = ref.exact(inputs, 1), ref.outputs(inputs, 1, "a set")
    obs = Observations()
    measured = check_precision(out, ref_out, exact, "a set", obs)
    assert not (under_the_floor and obs.findings), obs.findings
    check_rounded_operands(out, ref_out, exact, measured, ref, inputs, 1, "a set", obs)
    return {f.rule for f in obs.findings}, ref.runs


def test_rounding_to_7_bits_is_bfloat16s_and_to_10_bits_float16s_in_its_range():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(100_000, generator=g) * torch.exp(torch.randn(100_000, generator=g) * 3)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 1.0, -1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8])])
    assert torch.equal(round_mantissa(x, 7), x.to(torch.bfloat16).float())
    normal = x[(x.abs() > 6.2e-5) & (x.abs() < 6e4)]
    assert torch.equal(round_mantissa(normal, 10), normal.half().float())
    specials = torch.tensor([float("inf"), float("-inf"), float("nan")])
    assert torch.equal(round_mantissa(specials, 10)[:2], specials[:2]) and round_mantissa(specials, 10)[2].isnan()


def test_a_product_of_float16_rounded_unit_range_operands_is_found_though_under_the_floor():
    for seed in range(3):
        a, b = _unit_range(seed)
        cheat = a.half().float() @ b.half().float()
        assert _judge(_Product(), [a, b], cheat, under_the_floor=True) == ({"lower_precision"}, 1)


def test_a_bfloat16_rounded_linear_layer_is_found_with_its_weights_rounded_too():
    """Positive inputs and weights: every term of the sum has one sign, so bfloat16's rounding averages
    out under the floor too."""
    torch.manual_seed(0)
    model = _Linear()
    with torch.no_grad():
        model.fc.weight.abs_()
        x = torch.rand(64, 1024, generator=torch.Generator().manual_seed(3))
        cheat = torch.nn.functional.linear(x.bfloat16().float(), model.fc.weight.bfloat16().float(),
                                           model.fc.bias.bfloat16().float())
    assert _judge(model, [x], cheat, under_the_floor=True)[0] == {"lower_precision"}


def test_honest_float32_products_are_not_found():
    for seed in range(3):
        a, b = _unit_range(seed)
        by_chunks = sum(a[:, k:k + 128] @ b[k:k + 128] for k in range(0, 1024, 128))  # another order
        assert _judge(_Product(), [a, b], by_chunks)[0] == set()


def test_noise_as_far_from_float64_as_the_rounding_is_not_found():
    """What raises the suspicion (far from float64) is not enough: the output must also be close to
    the rounded yardstick. Noise of the rounded product's size is close to neither."""
    a, b = _unit_range(4)
    exact = a @ b
    noisy = exact * (1 + 1e-5 * torch.randn(exact.shape, generator=torch.Generator().manual_seed(5)))
    assert _judge(_Product(), [a, b], noisy) == (set(), 6)  # every rounding of every operand set


def test_operands_the_narrow_format_holds_exactly_find_nothing():
    """Integers in floats round to themselves: both yardsticks are the same, so even a noisy output
    is not closer to the rounded one."""
    g = torch.Generator().manual_seed(6)
    a, b = torch.randint(0, 8, (32, 256), generator=g).float(), torch.randint(0, 8, (256, 32), generator=g).float()
    noisy = (a @ b) * (1 + 1e-6 * torch.randn(32, 32, generator=g))
    assert _judge(_Product(), [a, b], noisy)[0] == set()


def test_an_output_close_to_float64_raises_no_suspicion_and_computes_no_yardstick():
    a, b = _unit_range(7)
    assert _judge(_Product(), [a, b], (a.double() @ b.double()).float()) == (set(), 0)


class _MeanSquare(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mean((a - b) ** 2)


def test_a_scalar_output_has_no_pattern_to_match():
    """On the H100 an honest mean of squares (one element) was 3.2e-6 from float64 and 3.6e-7 from the
    reference run on bfloat16 operands: one number close to another by chance. A one-element output's
    error is all along itself, so nothing is left to match, even where the number is the rounded run's."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1024, 2048, generator=g), torch.randn(1024, 2048, generator=g)
    ref = ReferenceModel(_MeanSquare, [], 0, "cpu")
    same = ref.rounded([a, b], 1, ROUNDINGS[1], operand_sets([a, b], False)[0])
    rules, runs = _judge(_MeanSquare(), [a, b], same)
    assert runs > 0 and rules == set()


def test_a_product_with_one_operand_rounded_is_found():
    """Red-team pass 33: the left operand alone in float16 is as far from the product of both rounded
    as from the exact one; the run with the left operand alone rounded is close to it."""
    a, b = _unit_range(8)
    cheat = a.half().float() @ b
    assert _judge(_Product(), [a, b], cheat, under_the_floor=True)[0] == {"lower_precision"}


def test_the_operand_sets_are_every_operand_then_each_alone():
    x = torch.zeros(2)
    every = Operands(frozenset({0, 2}), True)
    assert operand_sets([x, 3, x], True) == [every, Operands(frozenset({0}), False), Operands(frozenset({2}), False),
                                             Operands(frozenset(), True)]
    assert operand_sets([x], False) == [Operands(frozenset({0}), False)]
    assert operand_sets([x.double(), 1], False) == []
    assert [r.mantissa_bits for r in ROUNDINGS] == [10, 7]


class _Counting(torch.nn.Module):
    """A model whose output depends on how often it ran (as a training BatchNorm's statistics do)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return x * self.calls


def test_a_rounded_run_leaves_the_references_state_as_it_was():
    ref = ReferenceModel(_Counting, [], 0, "cpu")
    x = torch.rand(64, generator=torch.Generator().manual_seed(10))
    for operands in operand_sets([x], ref.has_parameters):  # the input alone too, which rounds no parameter
        ref.rounded([x], 1, ROUNDINGS[0], operands)
    assert torch.equal(ref.outputs([x], 1, "a set"), x)


class _SmallTerm(torch.nn.Module):
    """a + b / 256: rounding b to 10 bits moves the output by ~3e-7 of it, a few float32 ulps."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b / 256


def test_a_rounding_that_moves_the_output_less_than_float32s_own_is_not_told_from_it():
    """The run with b rounded differs from the reference by a few ulps, under MIN_MOVE: an output equal to
    it is the reference's to within float32's own rounding, which proves nothing (where such a run was
    the reference's algorithm itself, an honest output equal to it was found on the CPU)."""
    g = torch.Generator().manual_seed(11)
    a, b = torch.rand(4096, generator=g) + 1, torch.rand(4096, generator=g)
    ref = ReferenceModel(_SmallTerm, [], 0, "cpu")
    b_alone = operand_sets([a, b], False)[2]
    same = ref.rounded([a, b], 1, ROUNDINGS[0], b_alone)
    rules, runs = _judge(_SmallTerm(), [a, b], same)
    assert runs > 0 and rules == set()
