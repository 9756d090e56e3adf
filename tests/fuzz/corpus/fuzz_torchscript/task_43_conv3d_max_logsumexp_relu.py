def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv3d(x, p["conv.weight"], p["conv.bias"], [1, 1, 1], [1, 1, 1], [1, 1, 1], 1)
    x = torch.max_pool3d(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = torch.relu(x)
    return x
