def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.avg_pool2d(x, [11, 11], [11, 11], [0, 0], False, True, None)
