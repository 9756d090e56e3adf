def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["gemm.weight"], p["gemm.bias"])
    x = torch.batch_norm(x, p["batch_norm.weight"], p["batch_norm.bias"], p["batch_norm.running_mean"], p["batch_norm.running_var"], True, 0.1, 1e-05, True)
    x = torch.nn.functional.gelu(x)
    x = torch.relu(x)
    return x
