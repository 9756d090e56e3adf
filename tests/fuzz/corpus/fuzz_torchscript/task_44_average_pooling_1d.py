def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.avg_pool1d(x, [8], [1], [4], False, True)
