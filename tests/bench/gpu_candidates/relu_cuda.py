"""CUDA candidate for builtin:relu — grid-stride ReLU, float4 loads/stores when the size allows."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float relu1(float v) { return v < 0.f ? 0.f : v; }  // NaN stays NaN

__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = relu1(v.x); v.y = relu1(v.y); v.z = relu1(v.z); v.w = relu1(v.w);
        y[i] = v;
    }
}

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long start, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = relu1(x[i]);
    }
}

static int blocks_for(long long work, int threads) {
    long long b = (work + threads - 1) / threads;
    if (b > 65535LL * 32) b = 65535LL * 32;
    return (int)(b < 1 ? 1 : b);
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "relu_forward: expected a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_forward: expected float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long long n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    long long n4 = n / 4;
    if (n4 > 0) {
        relu_vec4_kernel<<<blocks_for(n4, threads), threads>>>(
            reinterpret_cast<const float4*>(xc.data_ptr<float>()), reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
    }
    if (n4 * 4 < n) {
        relu_kernel<<<1, threads>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n);
    }
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "relu_forward: ", cudaGetErrorString(err));
    return y;
}
"""

CPP_SOURCE = "torch::Tensor relu_forward(torch::Tensor x);"

_ext = load_inline(
    name="htam_bench_relu",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["relu_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.relu_forward(x)
