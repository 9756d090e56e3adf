def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.avg_pool3d(x, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None)
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, [1, 1, 1])
    x = torch.clamp(x, 0.0, 1.0)
    t_1 = x.size()
    b = t_1[0]
    c = t_1[1]
    d = t_1[2]
    h = t_1[3]
    w = t_1[4]
    x = x.view(b, c, -1)
    x = torch.softmax(x, dim=2)
    x = x.view(b, c, d, h, w)
    x = x * p["scale"]
    return x
