def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    b1 = torch.conv2d(x, p["branch1x1.weight"], p["branch1x1.bias"], [1, 1], [0, 0], [1, 1], 1)
    b2 = torch.conv2d(x, p["branch3x3.0.weight"], p["branch3x3.0.bias"], [1, 1], [0, 0], [1, 1], 1)
    b2 = torch.conv2d(b2, p["branch3x3.1.weight"], p["branch3x3.1.bias"], [1, 1], [1, 1], [1, 1], 1)
    b3 = torch.conv2d(x, p["branch5x5.0.weight"], p["branch5x5.0.bias"], [1, 1], [0, 0], [1, 1], 1)
    b3 = torch.conv2d(b3, p["branch5x5.1.weight"], p["branch5x5.1.bias"], [1, 1], [2, 2], [1, 1], 1)
    b4 = torch.max_pool2d(x, [3, 3], [1, 1], [1, 1], [1, 1], False)
    b4 = torch.conv2d(b4, p["branch_pool.1.weight"], p["branch_pool.1.bias"], [1, 1], [0, 0], [1, 1], 1)
    y = torch.cat([b1, b2, b3, b4], 1)
    return y
