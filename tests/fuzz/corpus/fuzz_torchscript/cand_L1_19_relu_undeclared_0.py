import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
#include <torch/extension.h>
torch::Tensor relu_fast(torch::Tensor x) { return torch::clamp_min(x, zero); }
"""

relu_ext = load_inline(name="kwb_cpp_relu_undeclared", cpp_sources=cpp_source, functions=["relu_fast"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_fast(x)
