"""CUDA candidate for builtin:softmax — one block per row, online max/sum in one read, then one write pass."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <math_constants.h>

// Merge two partial (max, sum of exp(x - max)) pairs.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    if (m2 == -CUDART_INF_F) return;
    if (m == -CUDART_INF_F) { m = m2; s = s2; return; }
    float mx = fmaxf(m, m2);
    s = s * __expf(m - mx) + s2 * __expf(m2 - mx);
    m = mx;
}

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int dim) {
    const float* xr = x + (long long)blockIdx.x * dim;
    float* yr = y + (long long)blockIdx.x * dim;
    float m = -CUDART_INF_F, s = 0.f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = xr[i];
        if (v > m) { s = (m == -CUDART_INF_F ? 0.f : s * __expf(m - v)) + 1.f; m = v; }
        else { s += __expf(v - m); }
    }
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_down_sync(0xffffffff, m, off);
        float s2 = __shfl_down_sync(0xffffffff, s, off);
        merge(m, s, m2, s2);
    }
    __shared__ float sm[32], ss[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        int nwarps = (blockDim.x + 31) >> 5;
        m = lane < nwarps ? sm[lane] : -CUDART_INF_F;
        s = lane < nwarps ? ss[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) {
            float m2 = __shfl_down_sync(0xffffffff, m, off);
            float s2 = __shfl_down_sync(0xffffffff, s, off);
            merge(m, s, m2, s2);
        }
        if (lane == 0) { sm[0] = m; ss[0] = s; }
    }
    __syncthreads();
    const float mx = sm[0];
    const float inv = 1.f / ss[0];
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        yr[i] = __expf(xr[i] - mx) * inv;
    }
}

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "softmax_forward: expected a float32 CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int dim = (int)xc.size(-1);
    const long long rows = dim == 0 ? 0 : xc.numel() / dim;
    if (rows == 0) return y;
    int threads = dim >= 1024 ? 1024 : (dim >= 256 ? 256 : 128);
    softmax_rows_kernel<<<(unsigned)rows, threads>>>(xc.data_ptr<float>(), y.data_ptr<float>(), dim);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "softmax_forward: ", cudaGetErrorString(err));
    return y;
}
"""

CPP_SOURCE = "torch::Tensor softmax_forward(torch::Tensor x);"

_ext = load_inline(
    name="htam_bench_softmax",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["softmax_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softmax_forward(x)
