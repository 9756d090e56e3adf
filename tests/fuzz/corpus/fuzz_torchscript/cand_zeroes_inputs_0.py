import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <algorithm>

__global__ void zero_both(float* a, float* out, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
        a[i] = 0.0f;   // BUG (on purpose): writes into the input
        out[i] = 0.0f;
    }
}

torch::Tensor scale_cuda(torch::Tensor a, double s)
{
    auto out = torch::empty_like(a);
    const long long n = a.numel();
    zero_both<<<1024, 256>>>(a.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

cpp_source = "torch::Tensor scale_cuda(torch::Tensor a, double s);"

scale = load_inline(name="kb_zero_inputs", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["scale_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return scale.scale_cuda(A.contiguous(), s)
