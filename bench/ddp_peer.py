#!/usr/bin/python3
"""PyTorch DDP peer for the ptrain throughput benchmark.

Trains the MLP 784-128-10 (ReLU, cross-entropy, Adam lr 1e-3) on Fashion-MNIST
with DistributedDataParallel over gloo on CPU, one single-threaded process per
worker, and prints one JSON line with the measured samples/s.

Run with Debian's interpreter (the one that has torch):
    /usr/bin/python3 bench/ddp_peer.py --workers 2 --batch 64 --steps 500 --warmup 50
"""
import os

# One thread per worker, set before torch loads OpenMP/OpenBLAS; spawned
# children re-import this module, so they get it too.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse
import gzip
import json
import socket
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
IMAGES, LABELS = "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"
PIXELS = 28 * 28


def check_data(data_dir):
    """Reads only the IDX headers, so bad input fails once, in the parent,
    before any worker starts. Returns the number of training samples."""
    def header(name, size):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            raw = f.read(size)
        if len(raw) != size:
            raise ValueError(f"{name}: shorter than an IDX header")
        return struct.unpack(f">{size // 4}I", raw)

    magic, n, rows, cols = header(IMAGES, 16)
    if magic != 2051 or rows * cols != PIXELS:
        raise ValueError(f"{IMAGES}: not a 28x28 IDX image file")
    magic, n_labels = header(LABELS, 8)
    if magic != 2049 or n_labels != n:
        raise ValueError(f"{LABELS}: not an IDX label file matching {IMAGES}")
    return n


def load_data(data_dir):
    """The whole training set as tensors: images [n, 784] in [0, 1], labels [n]."""
    def payload(name, header):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=header)

    labels = payload(LABELS, 8)
    images = payload(IMAGES, 16).reshape(labels.size, PIXELS)
    return (torch.from_numpy(images.astype(np.float32) / 255.0),
            torch.from_numpy(labels.astype(np.int64)))


def worker(rank, args, port):
    try:
        run_worker(rank, args, port)
    except Exception as e:  # one line per failing rank; spawn stops the others
        print(f"ddp_peer.py: error: rank {rank}: {type(e).__name__}: {e}",
              file=sys.stderr, flush=True)
        sys.exit(1)


def run_worker(rank, args, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    try:
        x, y = load_data(args.data)
        # Strided shard, as DistributedSampler does; each rank shuffles its own.
        shard = torch.arange(rank, y.numel(), args.workers)
        gen = torch.Generator().manual_seed(1000 + rank)
        torch.manual_seed(0)  # same init everywhere (DDP broadcasts rank 0's anyway)
        model = DistributedDataParallel(
            nn.Sequential(nn.Linear(PIXELS, 128), nn.ReLU(), nn.Linear(128, 10)))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()

        order, pos = shard[torch.randperm(shard.numel(), generator=gen)], 0

        def step():
            nonlocal order, pos
            if pos + args.batch > order.numel():  # epoch done: reshuffle
                order, pos = shard[torch.randperm(shard.numel(), generator=gen)], 0
            idx = order[pos:pos + args.batch]
            pos += args.batch
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x.index_select(0, idx)), y.index_select(0, idx))
            loss.backward()  # DDP all-reduces the gradients here
            opt.step()

        for _ in range(args.warmup):
            step()
        dist.barrier()  # all ranks start the clock together
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        dist.barrier()  # ... and stop it when the slowest rank is done
        seconds = time.perf_counter() - start

        if rank == 0:
            samples = args.workers * args.batch * args.steps
            print(json.dumps({"peer": "pytorch-ddp", "workers": args.workers,
                              "batch": args.batch, "steps": args.steps,
                              "seconds": round(seconds, 6),
                              "samples_per_s": round(samples / seconds, 2)},
                             separators=(",", ":")), flush=True)
    finally:
        dist.destroy_process_group()


def free_port():
    # Let the OS pick; there is a small window before rank 0 binds it again.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batch", type=int, default=64, help="per-worker batch size")
    p.add_argument("--steps", type=int, default=500, help="timed steps")
    p.add_argument("--warmup", type=int, default=50, help="untimed steps first")
    p.add_argument("--data", default=DEFAULT_DATA, help="Fashion-MNIST directory")
    args = p.parse_args()
    for name in ("workers", "batch", "steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must not be negative")

    try:
        n = check_data(args.data)
        if args.batch > n // args.workers:
            raise ValueError(f"--batch {args.batch} exceeds the per-worker shard "
                             f"of {n // args.workers} samples")
        mp.spawn(worker, args=(args, free_port()), nprocs=args.workers, join=True)
    except mp.ProcessExitedException:
        sys.exit(1)  # the failing rank has already said why
    except Exception as e:
        print(f"ddp_peer.py: error: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
