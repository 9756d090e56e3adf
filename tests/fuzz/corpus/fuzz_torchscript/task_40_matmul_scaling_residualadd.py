def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["matmul.weight"], p["matmul.bias"])
    original_x = x.clone().detach()
    x = x * 0.5
    x = x + original_x
    return x
