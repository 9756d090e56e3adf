def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.conv2d(x, p["conv2d.weight"], None, [1, 1], [0, 0], [1, 1], 1)
