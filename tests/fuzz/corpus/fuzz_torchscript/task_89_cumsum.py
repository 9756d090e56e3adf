def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.cumsum(x, dim=1)
