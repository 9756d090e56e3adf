def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [0, 0, 0], 1, [1, 1, 1])
    x = torch.layer_norm(x, [64], p["layer_norm.weight"], p["layer_norm.bias"], 1e-05, True)
    x = torch.nn.functional.gelu(x)
    x = x * 1.0
    return x
