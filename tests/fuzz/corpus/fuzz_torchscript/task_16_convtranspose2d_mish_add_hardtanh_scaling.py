def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2], [1, 1], [1, 1], 1, [1, 1])
    x = torch.nn.functional.mish(x)
    x = x + 0.5
    x = torch.nn.functional.hardtanh(x, min_val=-1.0, max_val=1.0)
    x = x * 2
    return x
