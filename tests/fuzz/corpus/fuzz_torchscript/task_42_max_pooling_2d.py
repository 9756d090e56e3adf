def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.max_pool2d(x, [4, 4], [1, 1], [1, 1], [1, 1], False)
