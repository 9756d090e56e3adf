def forward(x: Tensor, scale: float, p: Dict[str, Tensor]) -> Tensor:
    c = torch.empty_like(x)
    n = x.numel()
    kb.launch("scale_kernel", [1056], [256], x, c, scale, n)
    return c
