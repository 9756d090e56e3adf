def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    y = torch.linear(x, p["linear.weight"], p["linear.bias"])
    n = y.numel()
    grid = max(1, min((n // 4 + 255) // 256, 132 * 16))
    kb.launch("sub_mul_relu", [grid], [256], y, n)
    return y
