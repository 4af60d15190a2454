"""A convolution's bias moved out of the library call and into the fused tail that reads its result.

PyTorch runs a cuDNN convolution without its bias and then adds the bias in a pass of its own
over the whole output (`output.add_(bias)` in ATen's convolution), so a convolution with a tail
reads and writes its output once more than it needs to: on the H200, `2/1`'s 1 GB output made
that pass a sixth of eager's time. Inductor does what this pass does (its convolution is called
with `bias=None` and the bias is one more operand of the fused kernel after it). The result is
the same float32 sum either way, so the candidate stays within any tolerance the problem's own
convolution meets.

`split_conv_bias(gm)` rewrites a traced graph in place: every convolution module with a bias,
zero padding and one input becomes the functional convolution with `bias=None`, followed by an
add of the bias viewed per channel, which the lowering fuses into the region reading it.
"""

from __future__ import annotations

import operator

import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

# module type -> (the functional form, whether it is transposed)
FUNCTIONAL = {
    nn.Conv1d: (F.conv1d, False), nn.Conv2d: (F.conv2d, False), nn.Conv3d: (F.conv3d, False),
    nn.ConvTranspose1d: (F.conv_transpose1d, True), nn.ConvTranspose2d: (F.conv_transpose2d, True),
    nn.ConvTranspose3d: (F.conv_transpose3d, True),
}
TRANSPOSED_FUNCTIONS = frozenset(fn for fn, transposed in FUNCTIONAL.values() if transposed)


def _splittable(node: fx.Node, gm: fx.GraphModule) -> nn.Module | None:
    if node.op != "call_module" or len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], fx.Node):
        return None  # a transposed convolution given output_size computes its own output padding
    module = gm.get_submodule(str(node.target))
    if type(module) not in FUNCTIONAL or module.bias is None or module.padding_mode != "zeros":
        return None
    return module


def split_conv_bias(gm: fx.GraphModule) -> int:
    """Rewrite each splittable convolution (see the module docstring); how many were rewritten."""
    graph, count = gm.graph, 0
    for node in list(graph.nodes):
        module = _splittable(node, gm)
        if module is None:
            continue
        fn, transposed = FUNCTIONAL[type(module)]
        target = str(node.target)
        with graph.inserting_before(node):
            weight = graph.get_attr(f"{target}.weight")
            bias = graph.get_attr(f"{target}.bias")
            if transposed:
                args = (node.args[0], weight, None, module.stride, module.padding, module.output_padding,
                        module.groups, module.dilation)
            else:
                args = (node.args[0], weight, None, module.stride, module.padding, module.dilation, module.groups)
            conv = graph.call_function(fn, args)
            per_channel = graph.call_method("view", (bias, (1, -1) + (1,) * (module.weight.dim() - 2)))
            added = graph.call_function(operator.add, (conv, per_channel))
        node.replace_all_uses_with(added)
        graph.erase_node(node)
        count += 1
    if count:
        gm.recompile()
    return count

