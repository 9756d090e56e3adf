import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
#include <torch/extension.h>
torch::Tensor scale(torch::Tensor a, double s) { return a * s; }
"""

scale_ext = load_inline(name="kwb_cpp_scale", cpp_sources=cpp_source, functions=["scale"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return scale_ext.scale(A, s)
