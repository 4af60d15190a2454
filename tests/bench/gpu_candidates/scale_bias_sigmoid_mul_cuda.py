"""CUDA candidate for builtin:scale_bias_sigmoid_mul — x * sigmoid(x * scale + bias) in one pass."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void gate_kernel(const float* __restrict__ x, const float* __restrict__ scale,
                            const float* __restrict__ bias, float* __restrict__ y, long long n, int features) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int c = (int)(i % features);
        float v = x[i];
        float z = v * scale[c] + bias[c];
        y[i] = v / (1.f + expf(-z));
    }
}

torch::Tensor gate_forward(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "expected a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int features = (int)xc.size(-1);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    long long blocks = (n + threads - 1) / threads;
    if (blocks > 65535LL * 32) blocks = 65535LL * 32;
    gate_kernel<<<(unsigned)blocks, threads>>>(xc.data_ptr<float>(), scale.contiguous().data_ptr<float>(),
                                               bias.contiguous().data_ptr<float>(), y.data_ptr<float>(), n, features);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gate_forward: ", cudaGetErrorString(err));
    return y;
}
"""

CPP_SOURCE = "torch::Tensor gate_forward(torch::Tensor x, torch::Tensor scale, torch::Tensor bias);"

_ext = load_inline(
    name="htam_bench_gate",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["gate_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.2)

    def forward(self, x):
        return _ext.gate_forward(x, self.scale, self.bias)
