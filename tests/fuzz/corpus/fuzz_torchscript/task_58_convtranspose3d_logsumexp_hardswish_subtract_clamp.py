def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [0, 0, 0], 1, [1, 1, 1])
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = (x * torch.sigmoid(x + 3)) / 6
    x = x - p["bias"]
    x = torch.clamp(x, min=-1, max=1)
    return x
