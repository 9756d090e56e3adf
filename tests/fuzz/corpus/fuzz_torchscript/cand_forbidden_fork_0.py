def scale(A: Tensor, s: float) -> Tensor:
    return A * s


def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    fut = torch.jit._fork(scale, A, s)
    return torch.jit.wait(fut)
