def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    y = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    n = y.numel()
    grid = max(1, min((n // 4 + 255) // 256, 132 * 16))
    kb.launch("mish_mish", [grid], [256], y, n)
    return y
