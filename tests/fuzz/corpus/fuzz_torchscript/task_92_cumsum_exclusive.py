def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    cumsum = torch.cumsum(x.narrow(dim=1, start=0, length=x.size(1) - 1), dim=1)
    return torch.cat([torch.zeros_like(x.select(1, 0).unsqueeze(1)), cumsum], dim=1)
