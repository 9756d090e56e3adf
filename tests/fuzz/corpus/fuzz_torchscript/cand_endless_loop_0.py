def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    c = torch.empty_like(A)
    flag = torch.zeros([1], dtype=A.dtype, device=A.device)
    n = A.numel()
    kb.launch("scale_after_flag", [1056], [256], A, c, s, n, flag)
    return c
