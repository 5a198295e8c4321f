#!/usr/bin/python3
"""One rank of a multi-host PyTorch DDP job, the peer of bench/slow_network.sh.

Trains the MLP 784-H1-...-Hk-10 (ReLU, cross-entropy) on Fashion-MNIST with
DistributedDataParallel over gloo on CPU, one single-threaded process per host,
dense or with DDP's fp16 compression hook, and times it as `ptrain train`
times its epoch: from a barrier before the first timed step to a barrier after
the last, divided by the steps. Rank 0 prints one JSON line: mean_step_ms,
samples_per_s, and the bytes the busiest host sent per step (its eth0's
counter, when it has one).

Run one process on each host (tools/netcluster each sets the NETCLUSTER_*
defaults; GLOO_SOCKET_IFNAME picks the interface gloo uses):
    GLOO_SOCKET_IFNAME=eth0 tools/netcluster each 4 --name NAME -- \\
        /usr/bin/python3 bench/ddp_host.py --hidden 2048,2048 --steps 12
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"  # before torch loads OpenMP/OpenBLAS
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse
import datetime
import json
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_peer import DEFAULT_DATA, PIXELS, check_data, load_data  # noqa: E402

TX_BYTES = "/sys/class/net/eth0/statistics/tx_bytes"


def tx_bytes():
    """Bytes this host's eth0 has sent (a netcluster host is a namespace of
    its own), or -1 where there is no eth0."""
    try:
        with open(TX_BYTES) as f:
            return int(f.read())
    except OSError:
        return -1


def mlp(hidden):
    layers, width = [], PIXELS
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers, nn.Linear(width, 10))


def optimizer(name, params, lr):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    return torch.optim.Adam(params, lr=lr)


def run(args):
    torch.set_num_threads(1)
    host, _, port = args.master.partition(":")
    os.environ["MASTER_ADDR"] = host
    os.environ["MASTER_PORT"] = port or "29500"
    # The timeout also bounds every collective, so a lost peer ends the run.
    dist.init_process_group("gloo", rank=args.rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    if args.allreduce_only:
        allreduce_only(args)
    else:
        train(args)
    dist.barrier()  # every rank has its result before any leaves


def train(args):
    x, y = load_data(args.data)
    shard = torch.arange(args.rank, y.numel(), args.world)  # strided, as DistributedSampler
    gen = torch.Generator().manual_seed(1000 + args.rank)
    order = shard[torch.randperm(shard.numel(), generator=gen)]
    torch.manual_seed(0)
    model = DistributedDataParallel(mlp(args.hidden))
    if args.fp16_hook:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    opt = optimizer(args.optimizer, model.parameters(), args.lr)
    loss_fn = nn.CrossEntropyLoss()
    parameters = sum(p.numel() for p in model.parameters())

    def step(k):
        idx = order[k * args.batch:(k + 1) * args.batch]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x.index_select(0, idx)), y.index_select(0, idx))
        loss.backward()  # DDP all-reduces the gradients here, bucket by bucket
        opt.step()

    for k in range(args.warmup):
        step(k)
    dist.barrier()
    sent, start = tx_bytes(), time.perf_counter()
    for k in range(args.warmup, args.warmup + args.steps):
        step(k)
    dist.barrier()
    seconds = time.perf_counter() - start
    sent = tx_bytes() - sent if sent >= 0 else -1
    # The slowest rank's time and the busiest host's bytes.
    both = torch.tensor([seconds, float(sent)], dtype=torch.float64)
    dist.all_reduce(both, op=dist.ReduceOp.MAX)
    seconds, sent = both.tolist()
    if args.rank == 0:
        print(json.dumps({
            "peer": "pytorch-ddp" + ("-fp16" if args.fp16_hook else ""),
            "workers": args.world, "parameters": parameters, "batch": args.batch,
            "steps": args.steps, "warmup": args.warmup, "seconds": round(seconds, 6),
            "mean_step_ms": round(1000 * seconds / args.steps, 3),
            "samples_per_s": round(args.world * args.batch * args.steps / seconds, 2),
            "bytes_sent_per_step": round(sent / args.steps) if sent >= 0 else None,
        }, separators=(",", ":")), flush=True)


def allreduce_only(args):
    """gloo's own all-reduce of --allreduce-only MiB of floats, timed as
    `ptrain bench allreduce` times its own: the mean of --steps, after one
    untimed, of the slowest rank; bus bandwidth = 2(n-1)/n x bytes / time."""
    data = torch.ones(args.allreduce_only * 2**20 // 4)
    dist.all_reduce(data)
    times = []
    for _ in range(args.steps):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(data)
        times.append(time.perf_counter() - start)
    mean = torch.tensor([sum(times) / len(times)], dtype=torch.float64)
    dist.all_reduce(mean, op=dist.ReduceOp.MAX)
    seconds = mean.item()
    if args.rank == 0:
        algbw = data.numel() * 4 / seconds / 1e9
        print(json.dumps({"peer": "gloo-allreduce", "workers": args.world, "mib": args.allreduce_only,
                          "iters": args.steps, "mean_ms": round(1000 * seconds, 3), "algbw_gb_s": round(algbw, 4),
                          "busbw_gb_s": round(algbw * 2 * (args.world - 1) / args.world, 4)},
                         separators=(",", ":")), flush=True)


def env_default(name):
    return os.environ.get(name)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, default=env_default("NETCLUSTER_RANK"),
                   help="this process's rank (default: $NETCLUSTER_RANK)")
    p.add_argument("--world", type=int, default=env_default("NETCLUSTER_SIZE"),
                   help="the number of processes (default: $NETCLUSTER_SIZE)")
    p.add_argument("--master", default=env_default("NETCLUSTER_MASTER"),
                   help="rank 0's ADDRESS[:PORT] (default: $NETCLUSTER_MASTER, port 29500)")
    p.add_argument("--model", default="mlp", choices=["mlp"])
    p.add_argument("--hidden", default="2048,2048,2048,2048,2048",
                   help="the MLP's hidden widths, comma-separated")
    p.add_argument("--batch", type=int, default=32, help="per-worker batch size")
    p.add_argument("--steps", type=int, default=12, help="timed steps")
    p.add_argument("--warmup", type=int, default=0,
                   help="untimed steps first (0: every step is timed, as ptrain's mean_step_ms)")
    p.add_argument("--optimizer", default="momentum", choices=["sgd", "momentum", "adam"])
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--fp16-hook", action="store_true",
                   help="all-reduce in fp16 (DDP's default_hooks.fp16_compress_hook)")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds any rendezvous or collective may wait")
    p.add_argument("--data", default=DEFAULT_DATA, help="Fashion-MNIST directory")
    p.add_argument("--allreduce-only", type=int, default=0, metavar="MIB",
                   help="no training: time gloo's all-reduce of MIB MiB of floats, --steps times")
    args = p.parse_args()
    for name in ("rank", "world", "master"):
        if getattr(args, name) is None:
            p.error(f"--{name} is required (or NETCLUSTER_{'SIZE' if name == 'world' else name.upper()})")
    try:
        args.hidden = [int(h) for h in args.hidden.split(",")]
    except ValueError:
        p.error(f"--hidden '{args.hidden}': expected comma-separated widths, e.g. 2048,2048")
    if any(h < 1 for h in args.hidden):
        p.error(f"--hidden: every width must be at least 1")
    for name in ("world", "batch", "steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if not 0 <= args.rank < args.world:
        p.error(f"--rank {args.rank}: expected 0 to {args.world - 1}")
    if args.warmup < 0:
        p.error("--warmup must not be negative")
    if args.allreduce_only < 0:
        p.error("--allreduce-only must not be negative")
    if not args.lr > 0 or not args.timeout > 0:
        p.error("--lr and --timeout must be positive")
    port = args.master.partition(":")[2]
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        p.error(f"--master '{args.master}': the port must be 1 to 65535")
    try:
        n = check_data(args.data)
        need = (args.warmup + args.steps) * args.batch
        if need > n // args.world:
            raise ValueError(f"{args.warmup + args.steps} steps of batch {args.batch} exceed the "
                             f"per-worker shard of {n // args.world} samples")
        run(args)
    except Exception as e:  # one line per failing rank
        print(f"ddp_host.py: error: rank {args.rank}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        os._exit(1)
    # Leave without the gloo group's teardown: torch 1.13's now and then hung
    # there after the result was printed (twice in six runs of
    # bench/slow_network.sh), which stopped the bench.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
