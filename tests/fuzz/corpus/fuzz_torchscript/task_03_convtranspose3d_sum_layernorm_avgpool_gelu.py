def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, [1, 1, 1])
    x = x + p["sum_weight"]
    # normalized_shape (64,): the last dim (2W), not the channels
    x = torch.layer_norm(x, [64], p["norm.weight"], p["norm.bias"], 1e-5, True)
    # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    x = torch.avg_pool3d(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None)
    return torch.gelu(x)
