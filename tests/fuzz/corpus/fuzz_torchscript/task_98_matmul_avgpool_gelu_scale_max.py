def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["matmul.weight"], p["matmul.bias"])
    x = torch.avg_pool1d(x.unsqueeze(1), [16], [16], [0], False, True).squeeze(1)
    x = torch.nn.functional.gelu(x)
    x = x * 2.0
    x = torch.max(x, dim=1)[0]
    return x
