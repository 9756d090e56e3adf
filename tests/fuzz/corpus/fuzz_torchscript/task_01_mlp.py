def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.relu(torch.linear(x, p["network.0.weight"], p["network.0.bias"]))
    x = torch.relu(torch.linear(x, p["network.2.weight"], p["network.2.bias"]))
    return torch.linear(x, p["network.4.weight"], p["network.4.bias"])
