def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["gemm.weight"], p["gemm.bias"])
    x = x + p["bias"]
    x = torch.hardtanh(x, -1.0, 1.0)
    x = torch.mish(x)
    x = torch.group_norm(x, 256, p["groupnorm.weight"], p["groupnorm.bias"], 1e-05, True)
    return x
