def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [1, 1], [0, 0], [0, 0], 1, [1, 1])
    x = torch.nn.functional.gelu(x)
    x = torch.group_norm(x, 8, p["group_norm.weight"], p["group_norm.bias"], 1e-05, True)
    return x
