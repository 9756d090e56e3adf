def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.instance_norm(x, None, None, None, None, True, 0.1, 1e-05, False)
