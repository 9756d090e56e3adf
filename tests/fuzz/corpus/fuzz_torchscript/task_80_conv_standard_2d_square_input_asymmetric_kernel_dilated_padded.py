def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.conv2d(x, p["conv2d.weight"], None, [1, 1], [2, 4], [2, 3], 1)
