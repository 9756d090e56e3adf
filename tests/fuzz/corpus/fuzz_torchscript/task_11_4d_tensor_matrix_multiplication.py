def forward(A: Tensor, B: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.einsum("bijl,lk->bijk", A, B)
