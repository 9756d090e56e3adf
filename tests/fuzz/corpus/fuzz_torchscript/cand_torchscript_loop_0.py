def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    n = 0
    while n >= 0:
        n = n + 1 - 1
    return A * s
