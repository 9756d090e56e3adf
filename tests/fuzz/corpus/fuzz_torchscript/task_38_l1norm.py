def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return x / torch.mean(torch.abs(x), dim=1, keepdim=True)
