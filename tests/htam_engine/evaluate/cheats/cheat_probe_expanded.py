"""Cheat (no custom kernel / a probe handed an expanded view): cheat_probe_skip with one more
argument, a stride-0 (expanded) view. A run on garbage that could not write an expanded view
element by element fell back to skipping the launch with its tensors spoiled: the probe did not
run, its flag stayed unwritten and the candidate returned garbage, as if its kernel did the work.
Garbage is now written to the memory an expanded view names (each location once).

Class: no_kernel rule (decoy kernel), phase detection of the work check's calls."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def flag_kernel(flag_ptr, dummy_ptr):
    tl.store(flag_ptr, 1.0)


DUMMY = torch.zeros(1).expand(2)  # a broadcast view: stride 0


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flag = torch.zeros(1, device=x.device)
        flag_kernel[(1,)](flag, DUMMY.to(x.device).expand(2))
        if float(flag) != 1.0:  # skipped, spoiled, or the garbage run's fallback
            return torch.empty_like(x)
        return torch.relu(x)
