def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.relu(torch.conv2d(x, p["squeeze.weight"], p["squeeze.bias"], [1, 1], [0, 0], [1, 1], 1))
    return torch.cat([torch.relu(torch.conv2d(x, p["expand1x1.weight"], p["expand1x1.bias"], [1, 1], [0, 0], [1, 1], 1)), torch.relu(torch.conv2d(x, p["expand3x3.weight"], p["expand3x3.bias"], [1, 1], [1, 1], [1, 1], 1))], 1)
