#!/usr/bin/env python3
"""Plain single-thread PyTorch peer for the LSTM throughput benchmark
(bench/lstm_vs_peers.sh): the same model and batches as bench/lstm_loop.cpp,
on the token stream it wrote with --dump-tokens. Prints one JSON line."""
import argparse
import json
import time

import numpy as np
import torch
from torch import nn


class LstmNet(nn.Module):
    """The --model lstm network, as the word language-model recipe builds it."""

    def __init__(self, vocabulary, embedding, hidden, layers, dropout):
        super().__init__()
        self.encoder = nn.Embedding(vocabulary, embedding)
        self.lstm = nn.LSTM(embedding, hidden, layers, dropout=dropout if layers > 1 else 0.0, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(hidden, vocabulary)
        with torch.no_grad():
            self.encoder.weight.uniform_(-0.1, 0.1)
            self.decoder.weight.uniform_(-0.1, 0.1)
            self.decoder.bias.zero_()

    def forward(self, tokens, state):
        out, state = self.lstm(self.drop(self.encoder(tokens)), state)
        return self.decoder(self.drop(out)), state


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("tokens", help=".npy of the training token ids (lstm_loop --dump-tokens)")
    p.add_argument("--vocabulary", type=int, default=5000, help="the corpus's vocabulary size (--data-set bible --vocabulary)")
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--embedding", type=int, default=128)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--steps", type=int, default=200, help="timed steps")
    p.add_argument("--warmup", type=int, default=0,
                   help="untimed steps first (0: time from the first step, as ptrain's tokens/s does)")
    a = p.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    tokens = torch.from_numpy(np.load(a.tokens))
    inputs, targets = tokens[:-1], tokens[1:]
    # As ptrain reads a stream with one worker: pieces of bptt tokens,
    # row j = pieces [j*K, (j+1)*K), batch k = piece k of every row.
    per_row = inputs.numel() // a.bptt // a.batch
    if per_row == 0:
        raise SystemExit("lstm_peer.py: the stream is too short for this batch and bptt")
    used = a.batch * per_row * a.bptt
    inputs = inputs[:used].reshape(a.batch, per_row, a.bptt)
    targets = targets[:used].reshape(a.batch, per_row, a.bptt).clone()

    model = LstmNet(a.vocabulary, a.embedding, a.hidden, a.layers, a.dropout)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    state, k = None, 0

    def step():
        nonlocal state, k
        if k == per_row:  # a new epoch: the rows start over, from zeros
            k, state = 0, None
        x, y = inputs[:, k].contiguous(), targets[:, k].contiguous()
        k += 1
        opt.zero_grad()
        logits, state = model(x, state)
        state = tuple(s.detach() for s in state)  # truncated BPTT
        loss = loss_fn(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    seconds = time.perf_counter() - start
    print(json.dumps({"peer": "pytorch", "workers": 1, "batch": a.batch, "bptt": a.bptt, "steps": a.steps,
                      "warmup": a.warmup, "parameters": sum(q.numel() for q in model.parameters()),
                      "seconds": round(seconds, 6),
                      "tokens_per_s": round(a.batch * a.bptt * a.steps / seconds, 2),
                      "samples_per_s": round(a.batch * a.steps / seconds, 2)}))


if __name__ == "__main__":
    main()
