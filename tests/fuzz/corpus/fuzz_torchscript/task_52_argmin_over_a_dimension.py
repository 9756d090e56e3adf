def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.argmin(x, dim=1)
