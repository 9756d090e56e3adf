def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["matmul.weight"], p["matmul.bias"])
    x = x * 2.0
    x = x + x
    x = torch.clamp(x, -10.0, 10.0)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = x * torch.nn.functional.mish(x)
    return x
