def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["gemm.weight"], p["gemm.bias"])
    x = x * 2.0
    x = torch.leaky_relu(x, 0.1)
    return x
