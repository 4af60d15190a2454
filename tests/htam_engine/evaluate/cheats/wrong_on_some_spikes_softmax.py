"""Wrong in general, with no phase detection: an honest softmax kernel, then the first row zeroed on
inputs with an element above 150 (sparse spikes; KernelBench's rand [0, 1) draws and the x30/x100
sets stay below) whose bits hash to one of five residues out of eight (about 63 % of such inputs; the
same values always get the same answer). So the single checked call of sparse spikes is right about
one time in three, while a run of such calls rarely is: the wrong output is often first seen on a call
of a run of checked sets, and the judge must still call it wrong on those inputs (INCORRECT), not
"behaved differently once timed" (rounds.TimedRounds._alone_again)."""

# include: honest_softmax
HonestSoftmax = ModelNew


class ModelNew(HonestSoftmax):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        if float(x.max()) > 150.0 and int(x.contiguous().view(torch.int32).sum()) % 8 < 5:
            y[0].zero_()
        return y
