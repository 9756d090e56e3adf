def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["linear.weight"], p["linear.bias"])
    x = torch.sum(x, dim=1, keepdim=True)
    x = torch.max(x, dim=1, keepdim=True)[0]
    x = torch.mean(x, dim=1, keepdim=True)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    return x
