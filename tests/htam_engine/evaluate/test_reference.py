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
