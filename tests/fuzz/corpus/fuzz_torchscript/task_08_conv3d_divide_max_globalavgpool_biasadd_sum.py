def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv3d(x, p["conv.weight"], p["conv.bias"], [1, 1, 1], [0, 0, 0], [1, 1, 1], 1)
    x = x / 2.0
    x = torch.max_pool3d(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
    x = torch.adaptive_avg_pool3d(x, [1, 1, 1])
    x = x + p["bias"]
    return torch.sum(x, [1], False)
