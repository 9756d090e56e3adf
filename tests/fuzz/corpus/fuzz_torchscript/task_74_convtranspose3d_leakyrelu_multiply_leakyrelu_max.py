def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, [1, 1, 1])
    x = torch.leaky_relu(x, 0.2)
    x = x * p["multiplier"]
    x = torch.leaky_relu(x, 0.2)
    x = torch.max_pool3d(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
    return x
