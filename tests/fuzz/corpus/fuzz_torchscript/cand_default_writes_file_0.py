def scale(A: Tensor, s: float, n: int = len([torch.save("owned", "/tmp/kwb_fixture_default_writes_file")])) -> Tensor:
    return A * s

def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:
    return scale(A, s)
