def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    n = A.numel()
    kb.launch("scale_in_place", [4096], [256], A, s, n)
    return A   # BUG: the input itself, not a new tensor
