def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    # aten order: input, weight, bias, stride, padding, output_padding, groups, dilation
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2], [1, 1], [1, 1], 1, [1, 1])
    x = x + p["bias"]
    x = torch.clamp(x, 0.0, 1.0)
    x = x * 2.0
    x = torch.clamp(x, 0.0, 1.0)
    return x / 2.0
