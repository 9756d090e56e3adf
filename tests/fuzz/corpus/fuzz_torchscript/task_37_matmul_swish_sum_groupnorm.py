def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["matmul.weight"], p["matmul.bias"])
    x = torch.sigmoid(x) * x
    x = x + p["bias"]
    x = torch.group_norm(x, 64, p["group_norm.weight"], p["group_norm.bias"], 1e-05, True)
    return x
