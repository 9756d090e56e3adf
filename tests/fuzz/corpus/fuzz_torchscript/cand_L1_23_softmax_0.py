import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = """
#include <torch/extension.h>
#include <vector>

torch::Tensor softmax_rows(torch::Tensor x) {
    auto shifted = x - std::get<0>(x.max(1, true));
    auto e = shifted.exp();
    return e / e.sum(1, true);
}
"""

softmax_ext = load_inline(name="kwb_cpp_softmax", cpp_sources=[cpp_source], functions=["softmax_rows"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return softmax_ext.softmax_rows(x)
