def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.conv_transpose3d(x, p["conv_transpose3d.weight"], None, [2, 2, 2], [1, 1, 1], [0, 0, 0], 1, [2, 2, 2])
