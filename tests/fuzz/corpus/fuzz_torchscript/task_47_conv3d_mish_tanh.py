def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv3d(x, p["conv.weight"], p["conv.bias"], [1, 1, 1], [0, 0, 0], [1, 1, 1], 1)
    x = torch.nn.functional.mish(x)
    x = torch.tanh(x)
    return x
