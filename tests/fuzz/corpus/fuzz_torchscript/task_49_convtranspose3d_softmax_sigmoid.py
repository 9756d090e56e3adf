def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, [1, 1, 1])
    x = torch.softmax(x, 1)
    x = torch.sigmoid(x)
    return x
