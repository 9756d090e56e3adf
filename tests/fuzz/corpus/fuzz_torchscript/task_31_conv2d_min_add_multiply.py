def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    x = torch.min(x, torch.tensor(0.5))
    x = x + p["bias"]
    x = x * 2.0
    return x
