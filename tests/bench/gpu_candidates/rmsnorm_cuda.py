"""CUDA candidate for builtin:rmsnorm — one block per row: sum of squares, then scale by rsqrt and the gain."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void rmsnorm_rows_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                    float* __restrict__ y, int hidden, float eps) {
    const float* xr = x + (long long)blockIdx.x * hidden;
    float* yr = y + (long long)blockIdx.x * hidden;
    float acc = 0.f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        float v = xr[i];
        acc += v * v;
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffff, acc, off);
    __shared__ float partial[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        int nwarps = (blockDim.x + 31) >> 5;
        acc = lane < nwarps ? partial[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffff, acc, off);
        if (lane == 0) partial[0] = rsqrtf(acc / (float)hidden + eps);
    }
    __syncthreads();
    const float r = partial[0];
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        yr[i] = xr[i] * r * w[i];
    }
}

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "rmsnorm_forward: expected a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto y = torch::empty_like(xc);
    const int hidden = (int)xc.size(-1);
    TORCH_CHECK(wc.numel() == hidden, "rmsnorm_forward: weight size must match the last dimension");
    const long long rows = hidden == 0 ? 0 : xc.numel() / hidden;
    if (rows == 0) return y;
    int threads = hidden >= 1024 ? 512 : 256;
    rmsnorm_rows_kernel<<<(unsigned)rows, threads>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(),
                                                     hidden, (float)eps);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "rmsnorm_forward: ", cudaGetErrorString(err));
    return y;
}
"""

CPP_SOURCE = "torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor w, double eps);"

_ext = load_inline(
    name="htam_bench_rmsnorm",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["rmsnorm_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)  # same draw as the reference

    def forward(self, x):
        return _ext.rmsnorm_forward(x, self.weight, self.eps)
