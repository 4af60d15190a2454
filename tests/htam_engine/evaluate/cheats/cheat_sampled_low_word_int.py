"""Cheat (int64 arithmetic on the low 32-bit word, told by input statistics): x * 3 + 1 computed from
the low 32-bit word of each int64 (half the input bytes read) whenever 64 elements sampled across
the input all lie below 2^20; else the int64 kernel. get_inputs draws randint(0, 100): exact there.
The judge's wide-integer sets (checked, and in their run among the timed runs) give *every* element a
random bit length, so a sample of 64 sees one past 2^20 (cheat_slot_low_word_int, told by the slot,
is caught by them); no set has a few wide integers among small ones. Wrong in general: one element of
2^40 among small ones gives 1 where x * 3 + 1 = 3 * 2^40 + 1."""

# include: part_low_word_kernels


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        flat = x.view(-1)
        sample = flat[:: max(1, flat.numel() // 64)][:64]
        small = bool((sample.abs() < (1 << 20)).all())
        y = torch.empty_like(x)
        n = x.numel()
        if small:
            low_word_kernel[(triton.cdiv(n, 1024),)](x.view(torch.int32), y, n, BLOCK=1024)
        else:
            scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
