def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.mean(x, dim=1)
