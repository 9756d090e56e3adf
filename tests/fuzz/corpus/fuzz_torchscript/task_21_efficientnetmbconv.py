def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    identity = x
    x_1 = torch.conv2d(x, p["expand_conv.0.weight"], None, [1, 1], [0, 0], [1, 1], 1)
    x_2 = torch.batch_norm(x_1, p["expand_conv.1.weight"], p["expand_conv.1.bias"], p["expand_conv.1.running_mean"], p["expand_conv.1.running_var"], True, 0.1, 1e-05, True)
    x = torch.hardtanh(x_2, 0.0, 6.0)
    x_3 = torch.conv2d(x, p["depthwise_conv.0.weight"], None, [2, 2], [2, 2], [1, 1], 672)
    x_4 = torch.batch_norm(x_3, p["depthwise_conv.1.weight"], p["depthwise_conv.1.bias"], p["depthwise_conv.1.running_mean"], p["depthwise_conv.1.running_var"], True, 0.1, 1e-05, True)
    x = torch.hardtanh(x_4, 0.0, 6.0)
    x_5 = torch.conv2d(x, p["project_conv.0.weight"], None, [1, 1], [0, 0], [1, 1], 1)
    x = torch.batch_norm(x_5, p["project_conv.1.weight"], p["project_conv.1.bias"], p["project_conv.1.running_mean"], p["project_conv.1.running_var"], True, 0.1, 1e-05, True)
    return x
