def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    x = torch.instance_norm(x, None, None, None, None, True, 0.1, 1e-05, False)
    x = x / 2.0
    return x
