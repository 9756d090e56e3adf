def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["linear.weight"], p["linear.bias"])
    x = torch.sigmoid(x)
    x = torch.sum(x, dim=1, keepdim=True)
    return x
