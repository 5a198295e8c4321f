#!/usr/bin/env python3
"""Evaluate models that `ptrain train --save` wrote, with PyTorch alone.

    /usr/bin/python3 examples/python_eval/evaluate.py model.pt [more.pt ...]
    /usr/bin/python3 examples/python_eval/evaluate.py model.pt --data DIR
    /usr/bin/python3 examples/python_eval/evaluate.py model.pt --features x.npy --labels y.npy

For a token stream (ptrain's --data-set bible), `ptrain eval --model model.pt
--data-set bible --write-samples DIR` writes the rows it scored to
DIR/features.npy and DIR/labels.npy; given those, this script reports the
same perplexity.

The test set is read as it is stored: Fashion-MNIST's IDX files (Debian's
dataset-fashion-mnist package, gzipped or not) as uint8 pixels, or NumPy
arrays as np.save wrote them. The samples go to the model unchanged: its
forward does ptrain's preprocessing (uint8 to [0, 1], standardisation with
the training set's mean and deviation) itself. Nothing of ptrain is needed
but the file: torch.jit.load, model(x), model.loss(output, labels).

Prints, per model, the loss (mean per target, the loss ptrain trained with)
and the accuracy; --json prints one JSON object per line instead.
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
import torch


def read_idx(path):
    """An IDX file of unsigned bytes (the Fashion-MNIST format) as a NumPy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0:2] != b"\0\0" or data[2] != 0x08:
        sys.exit(f"{path}: not an IDX file of unsigned bytes")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims).copy()


def idx_file(directory, base):
    for name in (base + ".gz", base):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    sys.exit(f"{directory}: no {base}[.gz]")


def test_set(args):
    if args.features or args.labels:
        if not (args.features and args.labels):
            sys.exit("--features and --labels go together")
        return np.load(args.features), np.load(args.labels)
    images = read_idx(idx_file(args.data, "t10k-images-idx3-ubyte"))
    labels = read_idx(idx_file(args.data, "t10k-labels-idx1-ubyte"))
    return images, labels


def evaluate(path, features, labels, chunk=1000):
    model = torch.jit.load(path)
    model.eval()
    # One sample's shape as the model was trained on it, e.g. [1, 28, 28] for images stored as 28 x 28.
    # A recurrent model takes sequences of any length: a stream's rows (ptrain eval --write-samples)
    # whole, each from a zero state as ptrain scored it, as many at once as keep their outputs
    # (length x vocabulary floats each) near 1 GiB.
    recurrent = hasattr(model, "recurrent") and bool(model.recurrent)
    shape = [features.shape[-1]] if recurrent else list(model.input_shape)
    if recurrent:
        chunk = max(1, (1 << 28) // (features.shape[-1] * int(model.classes)))
    x_all = torch.from_numpy(np.ascontiguousarray(features)).reshape([-1] + shape)
    y_all = torch.from_numpy(np.ascontiguousarray(labels).astype(np.int64))
    loss_sum, correct, targets, near_ties = 0.0, 0, 0, 0
    with torch.no_grad():
        for start in range(0, len(y_all), chunk):
            x, y = x_all[start:start + chunk], y_all[start:start + chunk]
            output = model(x)
            loss_sum += model.loss(output, y).item() * y.numel()  # the mean per target, summed
            correct += int((output.argmax(-1) == y).sum())
            targets += y.numel()
            # Predictions another summation order could flip: the two highest outputs within 1e-4.
            top2 = output.topk(2, dim=-1).values
            near_ties += int((top2[..., 0] - top2[..., 1] < 1e-4 * top2[..., 0].abs().clamp(min=1)).sum())
    return {"model": path, "model_name": model.model_name, "task": model.task, "samples": len(y_all),
            "targets": targets, "correct": correct, "accuracy": correct / targets, "loss": loss_sum / targets,
            "near_ties": near_ties}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="files written by ptrain train --save")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                        help="directory with Fashion-MNIST's t10k-{images-idx3,labels-idx1}-ubyte[.gz]")
    parser.add_argument("--features", help="test features, a .npy file (instead of --data)")
    parser.add_argument("--labels", help="test labels, a .npy file")
    parser.add_argument("--json", action="store_true", help="one JSON object per model")
    args = parser.parse_args()
    features, labels = test_set(args)
    for path in args.models:
        r = evaluate(path, features, labels)
        if args.json:
            print(json.dumps(r))
        elif r["task"] == "language-model":
            print(f"{path}: perplexity {np.exp(r['loss']):.3f}  loss {r['loss']:.4f}  "
                  f"next-token accuracy {100 * r['accuracy']:.2f}% ({r['correct']} of {r['targets']})")
        else:
            print(f"{path}: accuracy {100 * r['accuracy']:.2f}% ({r['correct']} of {r['targets']})  "
                  f"loss {r['loss']:.4f}")


if __name__ == "__main__":
    main()
