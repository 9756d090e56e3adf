import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <algorithm>

torch::Tensor scale_cuda(torch::Tensor a, double s)
{
    return torch::empty_like(a);  // BUG (on purpose): no computation, recycled memory
}
"""

cpp_source = "torch::Tensor scale_cuda(torch::Tensor a, double s);"

scale = load_inline(name="kb_reuse_freed", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["scale_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return scale.scale_cuda(A.contiguous(), s)
