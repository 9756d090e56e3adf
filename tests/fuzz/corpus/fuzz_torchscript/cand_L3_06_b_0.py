def pool(x: Tensor, k: int, s: int, pad: int, relu: int) -> Tensor:
    N = x.size(0)
    C = x.size(1)
    H = x.size(2)
    W = x.size(3)
    Ho = (H + 2 * pad - k) // s + 1
    Wo = (W + 2 * pad - k) // s + 1
    out = torch.empty([N, C, Ho, Wo], dtype=x.dtype, device=x.device)
    total = N * C * Ho * Wo
    grid = max(1, min((total + 255) // 256, 132 * 32))
    kb.launch("maxpool2d_act", [grid], [256], x, out, total, H, W, Ho, Wo, k, s, pad, relu)
    return out


def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    w = torch.cat([p["branch1x1.weight"], p["branch3x3.0.weight"], p["branch5x5.0.weight"]], 0)
    b = torch.cat([p["branch1x1.bias"], p["branch3x3.0.bias"], p["branch5x5.0.bias"]], 0)
    c1 = p["branch1x1.weight"].size(0)
    c2 = p["branch3x3.0.weight"].size(0)
    c3 = p["branch5x5.0.weight"].size(0)
    y = torch.conv2d(x, w, b, [1, 1], [0, 0], [1, 1], 1)
    b1 = torch.narrow(y, 1, 0, c1)
    b2 = torch.narrow(y, 1, c1, c2).contiguous()
    b3 = torch.narrow(y, 1, c1 + c2, c3).contiguous()
    b2 = torch.conv2d(b2, p["branch3x3.1.weight"], p["branch3x3.1.bias"], [1, 1], [1, 1], [1, 1], 1)
    b3 = torch.conv2d(b3, p["branch5x5.1.weight"], p["branch5x5.1.bias"], [1, 1], [2, 2], [1, 1], 1)
    b4 = pool(x, 3, 1, 1, 0)
    b4 = torch.conv2d(b4, p["branch_pool.1.weight"], p["branch_pool.1.bias"], [1, 1], [0, 0], [1, 1], 1)
    return torch.cat([b1, b2, b3, b4], 1)
