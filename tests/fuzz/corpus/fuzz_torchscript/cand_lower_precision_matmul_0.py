def forward(A: Tensor, B: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.matmul(A.half(), B.half()).float()
