def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["linear.weight"], p["linear.bias"])
    x = x - 2.0
    x = x * 1.5
    return torch.relu(x)
