def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["linear.weight"], p["linear.bias"])
    x = x / 10.0
    x = torch.nn.functional.gelu(x)
    return x
