def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    x = torch.nn.functional.gelu(x)
    x = torch.nn.functional.adaptive_avg_pool2d(x, 1)
    x = x.squeeze(-1).squeeze(-1)
    return x
