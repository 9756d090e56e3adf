def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    out = torch.nn.functional.relu(torch.batch_norm(torch.conv2d(x, p["conv1.weight"], None, [1, 1], [0, 0], [1, 1], 3), p["bn1.weight"], p["bn1.bias"], p["bn1.running_mean"], p["bn1.running_var"], True, 0.1, 1e-05, True))
    out = torch.batch_norm(torch.conv2d(out, p["conv2.weight"], None, [1, 1], [1, 1], [1, 1], 120), p["bn2.weight"], p["bn2.bias"], p["bn2.running_mean"], p["bn2.running_var"], True, 0.1, 1e-05, True)
    channe1_t_2 = out.size()
    channe1_batch_size = channe1_t_2[0]
    channe1_channels = channe1_t_2[1]
    channe1_height = channe1_t_2[2]
    channe1_width = channe1_t_2[3]
    channe1_channels_per_group = channe1_channels // 3
    channe1_x = out.view(channe1_batch_size, 3, channe1_channels_per_group, channe1_height, channe1_width)
    channe1_x = channe1_x.transpose(1, 2).contiguous()
    channe1_x = channe1_x.view(channe1_batch_size, -1, channe1_height, channe1_width)
    out = channe1_x
    out = torch.nn.functional.relu(torch.batch_norm(torch.conv2d(out, p["conv3.weight"], None, [1, 1], [0, 0], [1, 1], 3), p["bn3.weight"], p["bn3.bias"], p["bn3.running_mean"], p["bn3.running_var"], True, 0.1, 1e-05, True))
    x_3 = torch.conv2d(x, p["shortcut.0.weight"], None, [1, 1], [0, 0], [1, 1], 1)
    out = out + torch.batch_norm(x_3, p["shortcut.1.weight"], p["shortcut.1.bias"], p["shortcut.1.running_mean"], p["shortcut.1.running_var"], True, 0.1, 1e-05, True)
    return out
