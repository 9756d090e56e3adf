def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [0, 0, 0], 1, [1, 1, 1])
    x = torch.clamp(x, min=-1.0)
    x = x / 2.0
    return x
