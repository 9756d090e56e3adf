def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return torch.layer_norm(x, [64, 256, 256], p["ln.weight"], p["ln.bias"], 1e-05, True)
