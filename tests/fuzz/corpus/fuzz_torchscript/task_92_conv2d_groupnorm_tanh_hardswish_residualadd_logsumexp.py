def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    x_conv = torch.conv2d(x, p["conv.weight"], p["conv.bias"], [1, 1], [0, 0], [1, 1], 1)
    x_norm = torch.group_norm(x_conv, 16, p["group_norm.weight"], p["group_norm.bias"], 1e-05, True)
    x_tanh = torch.tanh(x_norm)
    x_hard_swish = torch.hardswish(x_tanh)
    x_res = x_conv + x_hard_swish
    x_logsumexp = torch.logsumexp(x_res, dim=1, keepdim=True)
    return x_logsumexp
