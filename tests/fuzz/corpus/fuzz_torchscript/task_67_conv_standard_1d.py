def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.conv1d(x, p["conv1d.weight"], None, [1], [0], [1], 1)
