def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    c = torch.empty_like(A)
    n = A.numel()
    kb.launch("scale_kernel", [1056], [256], A, c, s, n)
    return c
