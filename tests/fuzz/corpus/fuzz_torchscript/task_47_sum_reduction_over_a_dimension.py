def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.sum(x, dim=1, keepdim=True)
