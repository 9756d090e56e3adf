def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["gemm.weight"], None)
    x = x + p["bias"]
    x = torch.relu(x)
    return x
