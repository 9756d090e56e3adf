def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    print("scaling by", s)
    return A * s
