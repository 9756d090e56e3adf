def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [0, 0, 0], 1, [1, 1, 1])
    x = torch.sigmoid(x) * x
    x = torch.group_norm(x, 4, p["group_norm.weight"], p["group_norm.bias"], 1e-05, True)
    x = torch.nn.functional.hardswish(x)
    return x
