def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2], [1, 1], [1, 1], 1, [1, 1])
    x = x * 0.5
    x = torch.mean(x, dim=[2, 3], keepdim=True)
    x = torch.mean(x, dim=[2, 3], keepdim=True)
    return x
