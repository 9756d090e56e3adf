def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    x = torch.tanh(x)
    x = x * 2.0
    x = x + p["bias"]
    x = torch.max_pool2d(x, [4, 4], [4, 4], [0, 0], [1, 1], False)
    return x
