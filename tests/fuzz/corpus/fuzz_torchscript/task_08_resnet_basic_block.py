def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    y = torch.conv2d(x, p["conv1.weight"], None, [1, 1], [1, 1], [1, 1], 1)
    y = torch.batch_norm(y, p["bn1.weight"], p["bn1.bias"], p["bn1.running_mean"], p["bn1.running_var"], True, 0.1, 1e-5, True)
    y = torch.relu(y)
    y = torch.conv2d(y, p["conv2.weight"], None, [1, 1], [1, 1], [1, 1], 1)
    y = torch.batch_norm(y, p["bn2.weight"], p["bn2.bias"], p["bn2.running_mean"], p["bn2.running_var"], True, 0.1, 1e-5, True)
    s = torch.conv2d(x, p["downsample.0.weight"], None, [1, 1], [0, 0], [1, 1], 1)
    s = torch.batch_norm(s, p["downsample.1.weight"], p["downsample.1.bias"], p["downsample.1.running_mean"], p["downsample.1.running_var"], True, 0.1, 1e-5, True)
    return torch.relu(y + s)
