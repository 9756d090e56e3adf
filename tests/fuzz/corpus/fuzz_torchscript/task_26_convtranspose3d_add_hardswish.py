def forward(x: Tensor, add_input: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, [1, 1, 1])
    x = x + add_input
    x = x * torch.nn.functional.hardswish(x)
    return x
