def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv2d(x, p["conv1.weight"], p["conv1.bias"], [4, 4], [2, 2], [1, 1], 1)
    return x
