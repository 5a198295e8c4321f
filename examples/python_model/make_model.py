#!/usr/bin/env python3
"""A model defined in Python, scripted and saved for ptrain.

    /usr/bin/python3 examples/python_model/make_model.py mlp.pt
    build/ptrain train --model torchscript --path mlp.pt --workers 4 --epochs 3

The module below is ptrain's built-in MLP (784-128-10), written in PyTorch,
so that the two can be compared. Any module that maps a batch of samples
(here [N, 1, 28, 28] float) to logits [N, classes] works the same way; a
`loss(output, labels)` method, if the module has one, replaces cross-entropy.
"""
import sys

import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, inputs: int = 784, hidden: int = 128, classes: int = 10):
        super().__init__()
        self.flatten = nn.Flatten()
        self.hidden = nn.Linear(inputs, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(self.flatten(x))))


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "mlp.pt"
    torch.manual_seed(int(sys.argv[2]) if len(sys.argv) > 2 else 42)
    torch.jit.script(Mlp()).save(path)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
