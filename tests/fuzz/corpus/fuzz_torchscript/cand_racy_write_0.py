def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    y = torch.conv3d(x, p["conv.weight"], p["conv.bias"], [1, 1, 1], [0, 0, 0], [1, 1, 1], 1)
    y = torch.softmax(y, 1)
    y = torch.max_pool3d(y, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
    z = torch.max_pool3d(y, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
    out = torch.empty_like(z)
    n = z.numel()
    kb.launch("racy_copy", [(n + 255) // 256], [256], z, out, n)
    return out
