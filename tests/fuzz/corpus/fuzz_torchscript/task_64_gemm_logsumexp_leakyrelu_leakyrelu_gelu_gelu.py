def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["linear.weight"], p["linear.bias"])
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = torch.nn.functional.leaky_relu(x, negative_slope=0.01)
    x = torch.nn.functional.leaky_relu(x, negative_slope=0.01)
    x = torch.nn.functional.gelu(x)
    x = torch.nn.functional.gelu(x)
    return x
