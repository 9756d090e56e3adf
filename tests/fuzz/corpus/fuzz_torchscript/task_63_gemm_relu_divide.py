def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["linear.weight"], p["linear.bias"])
    x = torch.relu(x)
    x = x / 2.0
    return x
