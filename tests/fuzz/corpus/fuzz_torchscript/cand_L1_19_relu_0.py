import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor relu_loop(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const int64_t n = in.numel();
    for (int64_t i = 0; i < n; ++i)
        dst[i] = std::max(src[i], 0.0f);
    return out;
}
"""

relu_ext = load_inline(name="kwb_cpp_relu", cpp_sources=cpp_source, functions=["relu_loop"], extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_loop(x)
