"""The judge's reference model (evaluate/reference.py): what it accepts, tried where a refusal
cannot end the judge."""

from __future__ import annotations

import torch

from htam_engine.evaluate import reference as reference_module


def test_a_set_the_reference_refuses_is_found_out_on_the_host_first():
    # on CUDA an out-of-range class label is a device-side assert that ends the judge's context;
    # a CPU copy of the reference says so with an exception instead
    class Labels(torch.nn.Module):
        def forward(self, logits, target):
            return torch.nn.functional.cross_entropy(logits, target)

    ref = reference_module.ReferenceModel(Labels, [], 0, "cpu")
    logits = torch.randn(8, 4)
    assert ref.accepts_on_host([logits, torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])], 1) is True
    assert ref.accepts_on_host([logits, torch.full((8,), 1 << 40)], 1) is False
    assert ref.accepts_on_host([logits, torch.zeros(8, dtype=torch.int64)], 1, limit_bytes=64) is None


class _Problem:
    """What CheckRun reads of a loaded problem: get_inputs (logits and class labels)."""

    input_layouts = None

    class main:
        @staticmethod
        def get_inputs():
            return [torch.randn(8, 4), torch.randint(0, 4, (8,))]


def _sets_checked(device: str, model: type) -> list[str]:
    """The wide-integer sets a check on `device` sends to the candidate (check_set recorded)."""
    from htam_engine.evaluate.checks.observe import Observations
    from htam_engine.evaluate.checks.sequence import CheckRun, ReferenceFacts
    from htam_engine.evaluate.config import EvalConfig

    run = CheckRun(None, _Problem, reference_module.ReferenceModel(model, [], 0, "cpu"), EvalConfig(),
                   Observations(), device)
    sent: list[str] = []
    # the set drawn as check_set draws it (through its maker), and accepted
    run.check_set = lambda label, make, reference, finite_only=False: make() and (sent.append(label) or True)
    run.check_wide_integers(ReferenceFacts(finite=True, numel=1))
    return sent


class _Labels(torch.nn.Module):
    def forward(self, logits, target):
        return torch.nn.functional.cross_entropy(logits, target)


class _Sum(torch.nn.Module):
    def forward(self, logits, target):
        return logits.sum() + target.sum()


def test_on_cuda_a_wide_integer_set_the_reference_refuses_never_reaches_the_judges_reference():
    assert _sets_checked("cuda", _Labels) == []
    assert _sets_checked("cuda", _Sum) == ["wide-integers", "sparse wide-integers"]
    # there the reference's own exception says so
    assert _sets_checked("cpu", _Labels) == ["wide-integers", "sparse wide-integers"]


def test_a_wide_integer_set_drawn_twice_is_tried_on_the_host_once():
    # a large set is drawn twice by check_set (staged first, drawn again for the reference); the
    # CPU copy of the model runs on it once
    from htam_engine.evaluate.checks.observe import Observations
    from htam_engine.evaluate.checks.sequence import CheckRun, ReferenceFacts
    from htam_engine.evaluate.config import EvalConfig

    run = CheckRun(None, _Problem, reference_module.ReferenceModel(_Sum, [], 0, "cpu"), EvalConfig(),
                   Observations(), "cuda")
    probed: list[list] = []
    run.probe_on_host = probed.append
    drawn = []
    run.check_set = lambda label, make, reference, finite_only=False: drawn.extend([make(), make()]) and None
    run.check_wide_integers(ReferenceFacts(finite=True, numel=1))
    # of each kind (wide everywhere, sparse wide) two sets tried (neither accepted), each probed once
    assert len(drawn) == 8 and len(probed) == 4
    assert all(torch.equal(a[1], b[1]) for a, b in zip(drawn[::2], drawn[1::2]))  # the same values each draw
