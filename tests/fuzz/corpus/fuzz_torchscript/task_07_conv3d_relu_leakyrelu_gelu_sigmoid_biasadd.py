def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv3d(x, p["conv.weight"], p["conv.bias"], [1, 1, 1], [0, 0, 0], [1, 1, 1], 1)
    x = torch.relu(x)
    x = torch.leaky_relu(x, 0.01)
    x = torch.gelu(x)
    x = torch.sigmoid(x)
    return x + p["bias"]
