def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [1, 1], [1, 1], [0, 0], 1, [1, 1])
    # kernel, stride, padding, dilation, ceil_mode
    x = torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    x = torch.hardtanh(x, -1.0, 1.0)
    x = torch.mean(x, [2, 3], True)
    return torch.tanh(x)
