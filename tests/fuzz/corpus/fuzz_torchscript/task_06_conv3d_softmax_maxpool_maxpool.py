def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv3d(x, p["conv.weight"], p["conv.bias"], [1, 1, 1], [0, 0, 0], [1, 1, 1], 1)
    x = torch.softmax(x, 1)
    # kernel, stride, padding, dilation, ceil_mode
    x = torch.max_pool3d(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
    return torch.max_pool3d(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
