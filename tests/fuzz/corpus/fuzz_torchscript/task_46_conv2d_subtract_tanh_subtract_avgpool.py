def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    x = x - 0.5
    x = torch.tanh(x)
    x = x - 0.2
    x = torch.avg_pool2d(x, [2, 2], [2, 2], [0, 0], False, True, None)
    return x
