def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.argmax(x, dim=1)
