def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.matmul(x, p["weight"].t())
    x = x / 2
    x = torch.sum(x, dim=1, keepdim=True)
    x = x * 1.5
    return x
