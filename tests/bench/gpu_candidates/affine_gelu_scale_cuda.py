"""CUDA candidate for builtin:affine_gelu_scale — affine, tanh-GELU and scale fused into one pass."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void affine_gelu_scale_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ b, const float* __restrict__ s,
                                         float* __restrict__ y, long long n, int features) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int c = (int)(i % features);
        float v = x[i] * w[c] + b[c];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.f + tanhf(inner)) * s[c];
    }
}

torch::Tensor affine_gelu_scale_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor s) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "expected a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int features = (int)xc.size(-1);
    const long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    long long blocks = (n + threads - 1) / threads;
    if (blocks > 65535LL * 32) blocks = 65535LL * 32;
    affine_gelu_scale_kernel<<<(unsigned)blocks, threads>>>(
        xc.data_ptr<float>(), w.contiguous().data_ptr<float>(), b.contiguous().data_ptr<float>(),
        s.contiguous().data_ptr<float>(), y.data_ptr<float>(), n, features);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "affine_gelu_scale_forward: ", cudaGetErrorString(err));
    return y;
}
"""

CPP_SOURCE = "torch::Tensor affine_gelu_scale_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor s);"

_ext = load_inline(
    name="htam_bench_affine_gelu_scale",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["affine_gelu_scale_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        # Created in the reference's order so the seeded draws match.
        self.weight = nn.Parameter(torch.randn(features) * 0.5 + 1.0)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)
        self.scale = nn.Parameter(torch.rand(features) + 0.5)

    def forward(self, x):
        return _ext.affine_gelu_scale_forward(x, self.weight, self.bias, self.scale)
