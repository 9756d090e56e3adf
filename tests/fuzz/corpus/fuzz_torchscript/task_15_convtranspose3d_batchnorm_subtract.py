def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x = torch.conv_transpose3d(x, p["conv_transpose.weight"], p["conv_transpose.bias"], [2, 2, 2], [1, 1, 1], [0, 0, 0], 1, [1, 1, 1])
    x = torch.batch_norm(x, p["batch_norm.weight"], p["batch_norm.bias"], p["batch_norm.running_mean"], p["batch_norm.running_var"], True, 0.1, 1e-05, True)
    x = x - torch.mean(x, dim=[2, 3, 4], keepdim=True)
    return x
