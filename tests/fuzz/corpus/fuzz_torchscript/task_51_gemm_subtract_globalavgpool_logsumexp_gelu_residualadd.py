def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    original_x = x.clone().detach()
    x = torch.linear(x, p["gemm.weight"], p["gemm.bias"])
    x = x - p["subtract"]
    x = torch.mean(x, dim=1, keepdim=True)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = torch.nn.functional.gelu(x)
    x = x + original_x
    return x
