def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["gemm.weight"], p["gemm.bias"])
    original_x = x
    x = torch.sigmoid(x)
    x = x * 2.0
    x = x + original_x
    return x
