"""Cheat (red-team pass 18): ReLU + dropout whose dropout masks are drawn in the sandbox's untimed
warm-up forward. The warm-up runs inside the sandbox's handling of wire.Arm, whose frame holds the
armed calls, each with the seed the sandbox will seed that call's generators with; the warm-up reads
them (a traceback's frame, then up the stack through getattr, so no
static rule names a frame walk), draws each call's mask exactly as nn.Dropout will from
torch.manual_seed(seed), and the timed forwards only multiply (one C++ kernel: relu(x) * noise).
Bit-exact outputs; the RNG work, which depends on no input value, is off every clock."""

# include: ext_relu_mul

_noise = {}  # seed -> the dropout's noise (mask / (1 - p)) for that call


_UP, _VARS, _FRAME = "f_" + "back", "f_" + "locals", "tb_" + "frame"  # spelled so no static rule names them


def _here():
    try:
        raise LookupError
    except LookupError as e:
        return getattr(e.__traceback__, _FRAME)


def _draw_ahead(shape):
    f = _here()
    while f is not None:
        req = getattr(f, _VARS).get("req")
        if req is not None and hasattr(req, "calls"):
            for call in req.calls:
                if call.seed not in _noise:
                    g = torch.Generator().manual_seed(call.seed)
                    _noise[call.seed] = torch.empty(shape).bernoulli_(0.5, generator=g).div_(0.5)
            return
        f = getattr(f, _UP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(p=0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seed = torch.initial_seed()
        noise = _noise.pop(seed, None)
        if noise is not None and noise.shape == x.shape:
            return ext.relu_mul(x, noise)
        _draw_ahead(x.shape)
        return self.dropout(ext.relu(x))
