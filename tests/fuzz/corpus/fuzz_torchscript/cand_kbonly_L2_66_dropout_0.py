import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.p = dropout_p

    def forward(self, x):
        x = F.linear(x, self.matmul.weight, self.matmul.bias)
        x = F.dropout(x, self.p, True)
        return torch.softmax(x, dim=1)
