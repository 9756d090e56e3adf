def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    x = torch.avg_pool2d(x, [4, 4], [4, 4], [0, 0], False, True, None)
    x = torch.sigmoid(x)
    x = torch.sum(x, dim=[1, 2, 3])
    return x
