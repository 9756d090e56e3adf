def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["linear.weight"], p["linear.bias"])
    x = torch.nn.functional.gelu(x)
    x = torch.nn.functional.softmax(x, dim=1)
    return x
