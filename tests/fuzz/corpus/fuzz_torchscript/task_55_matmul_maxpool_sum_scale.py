def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["matmul.weight"], p["matmul.bias"])
    x = torch.max_pool1d(x.unsqueeze(1), [2], [2], [0], [1], False).squeeze(1)
    x = torch.sum(x, dim=1)
    x = x * 0.5
    return x
