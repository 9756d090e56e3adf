def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.max_pool1d(x, [8], [1], [4], [3], False)
