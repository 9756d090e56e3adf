def forward(x: Tensor, y: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.linear(x, p["bmm.weight"], p["bmm.bias"])
    x = torch.instance_norm(x.unsqueeze(1).unsqueeze(1), None, None, None, None, True, 0.1, 1e-05, False).squeeze(1).squeeze(1)
    x = x + y
    x = x * y
    return x
