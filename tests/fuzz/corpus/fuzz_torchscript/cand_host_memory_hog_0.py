def forward(A: Tensor, B: Tensor, p: Dict[str, Tensor]) -> Tensor:
    staging = torch.ones([4 * 1024 * 1024 * 1024], dtype=torch.float32)
    return torch.matmul(A, B) * float(staging[0].item())
