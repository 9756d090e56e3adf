def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.nn.functional.elu(x, alpha=1.0)
