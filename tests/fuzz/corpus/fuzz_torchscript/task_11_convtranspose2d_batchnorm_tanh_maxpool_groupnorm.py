def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose2d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [1, 1], [1, 1], [0, 0], 1, [1, 1])
    x = torch.batch_norm(x, p["batch_norm.weight"], p["batch_norm.bias"], p["batch_norm.running_mean"], p["batch_norm.running_var"], True, 0.1, 1e-05, True)
    x = torch.tanh(x)
    x = torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    x = torch.group_norm(x, 8, p["group_norm.weight"], p["group_norm.bias"], 1e-05, True)
    return x
