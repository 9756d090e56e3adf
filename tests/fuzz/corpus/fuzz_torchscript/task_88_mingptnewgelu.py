def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return (0.5 * x) * (1.0 + torch.tanh(0.7978845608028654 * (x + (0.044715 * torch.pow(x, 3.0)))))
