def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [1, 1], [0, 0], [0, 0], 1, [1, 1])
    x = torch.mean(x, dim=[2, 3], keepdim=True)
    x = x + p["bias"]
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = torch.sum(x, dim=[2, 3])
    x = x * 10.0
    return x
