def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    y = torch.empty_like(A)
    n = A.numel()
    kb.launch("scale", [(n + 255) // 256], [256], A, y, s, n)
    return y
