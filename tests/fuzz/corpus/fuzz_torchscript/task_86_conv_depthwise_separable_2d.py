def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["depthwise.weight"], None, [1, 1], [1, 1], [1, 1], 64)
    x = torch.conv2d(x, p["pointwise.weight"], None, [1, 1], [0, 0], [1, 1], 1)
    return x
