def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.selu(x)
