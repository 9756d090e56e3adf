def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    out = torch.empty_like(A)
    n = A.numel()
    kb.launch("scale", [(n + 255) // 256], [256], out, A, s, n)
    return out
