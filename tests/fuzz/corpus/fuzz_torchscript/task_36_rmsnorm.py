def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-05)
    return x / rms
