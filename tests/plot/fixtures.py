"""Small input files for the plot tests, written exactly as ptrain and bench/ write them.

Hand-written ones follow docs/report.md (reports), the metrics stream and
timeline formats (run/metrics_stream.cpp, run/timeline_file.cpp), the sweep
CSV header of src/run/sweep_csv.cpp (read from that file, so the two cannot
drift apart) and the f-strings of bench/*.sh. Real ones come from the
ptrain executable the tests are given (PTRAIN_EXE), where it is cheap.
"""

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import ptrain_plot  # noqa: E402

PYTHON = "/usr/bin/python3"
PROGRAM = REPO / "python" / "ptrain_plot.py"


def ptrain_exe():
    """The ptrain executable under test, or None."""
    path = os.environ.get("PTRAIN_EXE") or str(REPO / "build" / "ptrain")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def sweep_header():
    """kSweepCsvHeader, as the C++ source spells it."""
    source = (REPO / "src" / "run" / "sweep_csv.cpp").read_text()
    body = source[source.index("kSweepCsvHeader ="):]
    body = body[:body.index(";")]
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body)).replace("\\n", "")


BASE_PLAN = {
    "codec": {"name": "none"},
    "data": {"dir": "/usr/share/datasets/fashion-mnist", "name": "fashion-mnist", "standardize": True,
             "train_samples": 2000},
    "model": {"hidden": [128], "name": "mlp"},
    "optimizer": {"beta1": 0.9, "beta2": 0.999, "eps": 1e-08, "lr": 0.001, "name": "adam", "weight_decay": 0.0},
    "run": {"backend": "local", "batch": 32, "checkpoint_dir": "", "checkpoint_every": "0", "checkpoint_keep": 3,
            "comm_timeout": 60.0, "device": "cpu", "epochs": 2.0, "local_workers": 1, "log_every": 10,
            "max_restarts": 0, "max_rollbacks": 3, "max_steps": 0, "metrics": "", "on_diverge": "stop",
            "placement": "compact", "rollback_lr_scale": 0.5, "save_model": "", "seed": 42,
            "straggler_factor": 1.0, "straggler_rank": -1, "threads_per_worker": 1, "time_limit": 0.0, "timeline": "",
            "topology": "", "transport": "auto", "workers": 4},
    "strategy": {"allreduce": "native", "bucket_size": "25MiB", "name": "hybrid", "overlap": True},
}

SSP_STRATEGY = {"name": "ssp", "servers": 1, "stale_policy": "none", "staleness": 2, "warmup_single": 0}


def plan(strategy=None, codec=None, **run):
    p = copy.deepcopy(BASE_PLAN)
    if strategy:
        p["strategy"] = copy.deepcopy(strategy)
    if codec:
        p["codec"] = copy.deepcopy(codec)
    p["run"].update(run)
    return p


def report(the_plan, curve, epochs, samples_per_s, task="classification", parameter_server=None,
           shared_memory=None, ratio=1.0, status="completed"):
    """A run report as run/report.cpp writes one (the fields the plotter reads, and their neighbours)."""
    workers = the_plan["run"]["workers"]
    r = {
        "schema_version": 1,
        "ptrain": {"version": "0.9.0", "commit": "abc1234"},
        "host": {"name": "test", "cpu": "test CPU", "cores": 2, "blas": "openblas"},
        "started_at": "2026-11-28T04:10:00Z",
        "command_line": ["ptrain", "train"],
        "plan": the_plan,
        "run": {"backend": "local", "transport": "threads of one process (no network)", "workers": workers,
                "local_workers": 1, "servers": 0, "model": "mlp", "task": task, "parameters": 101770,
                "train_samples": 2000, "test_samples": 10000},
        "epochs": [dict(e) for e in epochs],
        "loss_curve": [{"step": s, "loss": loss, "seconds": t} for s, t, loss in curve],
        "comm": [],
        "compression": {"ratio": ratio, "steady_ratio": ratio, "dense_bytes": 0, "encoded_bytes": 0,
                        "saturated": 0, "selected": 0, "refinements": 0},
        "device": {"name": "cpu"},
        "checkpoints": {"written": 0, "resumed_from": None, "resumed_at_step": 0},
        "outcome": {"status": status, "diverged_why": None, "recoveries": []},
        "summary": {"steps": int(sum(e["steps"] for e in epochs)), "samples": 4000,
                    "train_seconds": sum(e["seconds"] for e in epochs), "mean_step_ms": 1.0, "wall_seconds": 1.0,
                    "samples_per_s": samples_per_s,
                    "final_test_accuracy": epochs[-1]["test_accuracy"] if epochs else None,
                    "final_train_loss": epochs[-1]["train_loss"] if epochs else None,
                    "final_params_fnv1a64": "0123456789abcdef", "notes": {"all-reduce": "native in 1 bucket(s)"}},
    }
    if parameter_server is not None:
        r["parameter_server"] = parameter_server
    if shared_memory is not None:
        r["shared_memory"] = shared_memory
    return r


def epoch(n, steps, seconds, train_loss, test_loss, accuracy, samples_per_s=20000.0, perplexity=None):
    import math
    return {"epoch": n, "steps": steps, "train_loss": train_loss, "test_loss": test_loss,
            "test_accuracy": accuracy,
            "test_perplexity": perplexity if perplexity is not None else math.exp(test_loss),
            "seconds": seconds, "samples_per_s": samples_per_s}


def hybrid_report():
    return report(plan(), curve=[(10, 0.05, 1.9), (20, 0.10, 1.2), (30, 0.15, 0.9), (40, 0.20, 0.7)],
                  epochs=[epoch(1, 20, 0.11, 1.4, 0.8, 0.70), epoch(2, 20, 0.10, 0.75, 0.6, 0.78)],
                  samples_per_s=24000.0)


def ssp_report():
    ps = {"shards": 1, "updates": 80, "gradients_applied": 80, "dropped_late": 0, "dropped_stale": 0,
          "max_ssp_gap": 2, "staleness_histogram": [40, 25, 10, 5], "staleness_mean": 0.75, "staleness_p99": 3,
          "staleness_max": 3, "worker_steps": [20, 20, 20, 20], "left": [], "per_shard": []}
    return report(plan(SSP_STRATEGY, straggler_rank=3, straggler_factor=4.0),
                  curve=[(10, 0.08, 2.0), (20, 0.17, 1.5), (30, 0.26, 1.1), (40, 0.35, 0.95)],
                  epochs=[epoch(1, 20, 0.18, 1.7, 1.0, 0.62), epoch(2, 20, 0.18, 1.0, 0.8, 0.71)],
                  samples_per_s=11000.0, parameter_server=ps)


def language_model_report():
    r = report(plan(), curve=[(10, 0.1, 5.0), (20, 0.2, 4.2)],
               epochs=[epoch(1, 10, 0.1, 4.8, 4.5, 0.10, perplexity=90.0),
                       epoch(2, 10, 0.1, 4.1, 4.0, 0.15, perplexity=54.6)],
               samples_per_s=5000.0, task="language-model")
    return r


def shared_memory_report():
    shm = {"stopped_by": "epochs", "seconds_to_target": None, "diverged": False, "diverged_why": "",
           "final_train_loss": 1.1, "gradients": 125, "thread_gradients": [60, 65], "updates": 125,
           "updates_per_s": 800.0, "dropped": 0, "failed_swaps": 0, "failed_swaps_per_update": 0.0,
           "contended_locks": 0, "backoff_waits": 0, "backoff_us": 0.0, "staleness_mean": 0.6, "staleness_p50": 0,
           "staleness_p90": 1, "staleness_p99": 6, "staleness_max": 6,
           "staleness_histogram": [74, 45, 0, 0, 2, 1, 3], "cpus": [0, 1]}
    p = plan({"check_every": 0, "diverge_above": 1000.0, "loss_sample": 10000, "name": "hogwild",
              "target_loss": 0.0}, workers=2)
    return report(p, curve=[(0, 0.0, 2.3), (13, 0.015, 2.2), (26, 0.036, 2.1)],
                  epochs=[epoch(1, 125, 0.16, 2.26, 2.2, 0.37)], samples_per_s=12500.0, shared_memory=shm)


def metrics_lines(the_plan, steps, epochs, end=True, truncate_last=False, shared_memory=False):
    """A metrics stream (ptrain train --metrics): start, step (or loss_check), epoch, checkpoint, end."""
    lines = [{"event": "start", "started_at": "2026-11-28T04:10:00Z", "plan": the_plan, "model": "mlp",
              "parameters": 101770, "workers": the_plan["run"]["workers"], "train_samples": 2000,
              "test_samples": 10000, "task": "classification", "resumed_from": None}]
    per_epoch = max(1, len(steps) // max(1, len(epochs)))
    for i, (step, seconds, loss) in enumerate(steps):
        if shared_memory:
            lines.append({"event": "loss_check", "step": step, "loss": loss, "seconds": seconds})
        else:
            lines.append({"event": "step", "step": step, "epoch": i // per_epoch + 1, "loss": loss,
                          "seconds": seconds})
        if (i + 1) % per_epoch == 0 and (i + 1) // per_epoch <= len(epochs):
            lines.append(dict(epochs[(i + 1) // per_epoch - 1], event="epoch"))
    lines.insert(3, {"event": "checkpoint", "step": 20, "manifest": "ckpt/ckpt-20.json"})
    if end:
        lines.append({"event": "end", "status": "completed",
                      "summary": {"steps": 40, "samples": 5120, "train_seconds": 0.3, "samples_per_s": 17000.0,
                                  "final_test_accuracy": epochs[-1]["test_accuracy"],
                                  "final_train_loss": epochs[-1]["train_loss"]}})
    text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    if truncate_last:
        text += '{"event":"step","step":50,"epo'
    return text


METRIC_STEPS = [(10, 0.05, 2.1), (20, 0.1, 1.3), (30, 0.15, 1.0), (40, 0.2, 0.8)]
METRIC_EPOCHS = [{"epoch": 1, "steps": 20, "train_loss": 1.6, "test_loss": 1.1, "test_accuracy": 0.66,
                  "test_perplexity": 3.0, "seconds": 0.1, "samples_per_s": 16000.0},
                 {"epoch": 2, "steps": 20, "train_loss": 0.9, "test_loss": 0.8, "test_accuracy": 0.74,
                  "test_perplexity": 2.2, "seconds": 0.1, "samples_per_s": 17000.0}]


def timeline(workers=2, steps=5, step_us=1000.0, comm=True):
    """A Chrome trace as ptrain train --timeline writes one: per worker a track of steps with forward,
    backward, wait and optimizer inside, and a comm track with each bucket's all-reduce."""
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "ptrain"}}]
    tid = 0
    expected = {}
    for w in range(workers):
        tid += 1
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": f"worker {w}"}})
        worker_tid = tid
        comm_tid = None
        if comm:
            tid += 1
            comm_tid = tid
            events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": comm_tid,
                           "args": {"name": f"worker {w} comm"}})
        for s in range(steps):
            start = 100.0 + s * step_us + w * 10.0
            parts = [("forward", 0.0, 0.3), ("backward", 0.3, 0.4), ("wait", 0.7, 0.1), ("optimizer", 0.8, 0.15)]
            events.append({"name": "step", "cat": "step", "ph": "X", "ts": start, "dur": step_us * 0.95,
                           "pid": 0, "tid": worker_tid, "args": {"step": s + 1}})
            expected.setdefault((w, "step"), []).append((start, step_us * 0.95))
            for name, at, share in parts:
                events.append({"name": name, "cat": "compute", "ph": "X", "ts": start + at * step_us,
                               "dur": share * step_us, "pid": 0, "tid": worker_tid, "args": {"step": s + 1}})
                expected.setdefault((w, name), []).append((start + at * step_us, share * step_us))
            if comm:
                events.append({"name": "all-reduce", "cat": "comm", "ph": "X", "ts": start + 0.5 * step_us,
                               "dur": 0.25 * step_us, "pid": 0, "tid": comm_tid, "args": {"bucket": 0}})
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"ptrain": "0.9", "truncated": False}}, \
        expected


def sweep_rows():
    """Sweep rows with known cells: (strategy, threads, batch, lr, rep, reached, seconds, loss, diverged,
    crashed, staleness)."""
    return [
        ("hogwild", 1, 16, 0.01, 0, 1, 2.0, 0.5, 0, 0, 0.0),
        ("hogwild", 1, 16, 0.01, 1, 1, 4.0, 0.5, 0, 0, 0.0),
        ("hogwild", 1, 16, 0.05, 0, 1, 1.0, 0.5, 0, 0, 0.0),
        ("hogwild", 1, 16, 0.05, 1, 1, 2.0, 0.5, 0, 0, 0.0),   # cell (1,16): best lr 0.05, median 1.5
        ("hogwild", 2, 16, 0.01, 0, 1, 0.8, 0.5, 0, 0, 0.9),
        ("hogwild", 2, 16, 0.01, 1, 0, None, None, 1, 0, 1.3),  # diverged: counted as never, and one x
        ("hogwild", 2, 16, 0.01, 2, 1, 1.0, 0.5, 0, 0, 1.1),    # cell (2,16): median of 0.8, 1.0, never
        ("hogwild", 1, 32, 0.01, 0, 1, 3.0, 0.5, 0, 0, 0.0),    # cell (1,32) = 3.0
        ("hogwild", 2, 32, 0.01, 0, 0, None, None, 0, 1, None),
        ("hogwild", 2, 32, 0.01, 1, 0, None, None, 0, 1, None),  # all crashed: none, two x
        ("leashed", 1, 16, 0.01, 0, 1, 5.0, 0.5, 0, 0, 0.0),
        ("leashed", 2, 16, 0.01, 0, 0, None, 0.9, 0, 0, 2.5),   # not reached: none
    ]


def sweep_csv(rows=None, torn=False):
    header = sweep_header()
    lines = [header]
    for (strategy, threads, batch, lr, rep, reached, seconds, loss, diverged, crashed, staleness) in \
            (rows or sweep_rows()):
        if crashed:
            fields = [strategy, threads, batch, lr, rep, 42 + rep, "crashed", 0] + [""] * 3 + [0, 1] + \
                [""] * 15 + ["5c1cd573eeb9af34", '"worker 1 failed: boom, badly"', ""]
        else:
            fields = [strategy, threads, batch, lr, rep, 42 + rep, "diverged" if diverged else
                      ("target" if reached else "epochs"), reached,
                      "" if seconds is None else f"{seconds:.4f}", "" if loss is None else f"{loss:.6f}",
                      "0.5722", diverged, 0, "0.0089", 25, 25, "2804.9", f"{staleness:.4f}", 0, 0, 0, 0, 0,
                      "0.0000", 0, 0, "0:25", "32fa671d7d6d4995", "5c1cd573eeb9af34", "", ""]
        assert len(fields) == len(header.split(",")), len(fields)
        lines.append(",".join(str(f) for f in fields))
    text = "\n".join(lines) + "\n"
    if torn:
        text += "hogwild,4,16,0.01,0,42,epo"
    return text


DGC_CSV = ('configuration,test_accuracy,delta_vs_dense,ratio,steady_ratio,samples_per_s\n'
           '"dense (no compression)",84.1200,0.0000,1.000,1.000,21000.0\n'
           '"DGC, all parts",83.9000,-0.2200,270.500,600.250,18000.0\n'
           '"DGC, no momentum correction",82.5000,-1.6200,268.000,590.000,18100.0\n')

HYBRID_CSV = ("peer,workers,batch,steps,samples_per_s\n"
              "ptrain-hybrid,1,32,200,10000\nptrain-hybrid,1,32,200,12000\nptrain-hybrid,1,32,200,11000\n"
              "ptrain-hybrid,2,32,200,19000\nptrain-hybrid,2,32,200,21000\n"
              "pytorch-ddp,1,32,200,8000\npytorch-ddp,2,32,200,14000\n"
              "libtorch-loop,1,32,200,13000\n")

PS_CSV = ("strategy,samples_per_s,vs_no_straggler,test_accuracy_after_epochs,test_accuracy_after_time,"
          "epochs_in_time,staleness_mean,staleness_p99,staleness_max,dropped,samples_per_s_time_run\n"
          '"ps-sync, no straggler",9000.0,,80.1000,79.0000,1.500,0.0000,0,0,0,9100.0\n'
          '"ps-sync",4000.0,0.4444,80.0000,70.0000,0.700,0.0000,0,0,0,4050.0\n'
          '"ssp, s=2",7000.0,,79.5000,78.0000,1.200,1.2000,3,3,0,7100.0\n')

SIMULATE_CSV = ("bandwidth_gbit,exchange,workers,compute_ms,codec_ms,exchange_ms,step_ms,samples_per_s,efficiency\n"
                "1,ring,1,32.000000,0.000000,0.000000,32.000000,1000.00,1.000000\n"
                "1,ring,2,32.000000,0.000000,200.000000,232.000000,275.86,0.137931\n"
                "1,ring,4,32.000000,0.000000,300.000000,332.000000,385.54,0.096386\n"
                "1,allgather,1,32.000000,0.000000,0.000000,32.000000,1000.00,1.000000\n"
                "1,allgather,2,32.000000,1.000000,2.000000,35.000000,1828.57,0.914286\n"
                "1,allgather,4,32.000000,1.000000,4.000000,37.000000,3459.46,0.864865\n"
                "10,ring,1,32.000000,0.000000,0.000000,32.000000,1000.00,1.000000\n"
                "10,ring,2,32.000000,0.000000,20.000000,52.000000,1230.77,0.615385\n"
                "10,ring,4,32.000000,0.000000,30.000000,62.000000,2064.52,0.516129\n")

SIMULATE_NO_ONE_CSV = ("bandwidth_gbit,exchange,workers,compute_ms,codec_ms,exchange_ms,step_ms,samples_per_s,"
                       "efficiency\n"
                       "1,ring,2,32.000000,0.000000,200.000000,232.000000,275.86,0.137931\n"
                       "1,ring,4,32.000000,0.000000,300.000000,332.000000,385.54,0.096386\n")

ALLREDUCE_CSV = ("backend,algorithm,ranks,bytes,seconds,algbw_gbps,busbw_gbps,correct,ceiling_pct\n"
                 "local,stream-copy,2,67108864,,16.016414,,true,\n"
                 "local,ring,2,4096,0.000006422,0.637774,0.637774,true,22.04\n"
                 "local,ring,2,16384,0.000013377,1.224789,1.224789,true,42.32\n"
                 "local,hd,2,4096,0.000011629,0.352223,0.352223,true,12.17\n"
                 "local,hd,2,16384,0.000009309,1.759954,1.759954,true,60.81\n")

COMPRESS_CSV = ("codec,elements,encode_seconds,encode_gbps,decode_seconds,decode_gbps,wire_bytes,dense_bytes\n"
                "fp16,65536,0.000019808,13.234249,0.000076235,3.438616,131072,262144\n"
                "int8,65536,0.000026356,9.946148,0.000011002,23.826219,65792,262144\n"
                "dgc,65536,0.000105215,2.491500,0.000000147,1783.292517,536,262144\n"
                "nth_element,65536,0.000756934,0.346323,,,528,262144\n")

OVERLAP_CSV = ("backend,bucket,overlap,repeat,mean_step_ms,samples_per_s\n"
               "local,1MiB,overlap,0,2.0,64000\nlocal,1MiB,overlap,1,4.0,32000\nlocal,1MiB,overlap,2,3.0,42000\n"
               "local,1MiB,no-overlap,0,5.0,25600\n")


def write(directory, name, content):
    path = Path(directory) / name
    if isinstance(content, (dict, list)):
        content = json.dumps(content, indent=1)
    path.write_text(content)
    return str(path)


def run_program(*args, env=None):
    """python3 ptrain_plot.py ARGS: (status, stdout, stderr)."""
    done = subprocess.run([PYTHON, str(PROGRAM), *args], capture_output=True, text=True, timeout=120,
                          env=env)
    return done.returncode, done.stdout, done.stderr


def train(exe, directory, name, *flags):
    """A real run of ptrain train (or shm, when flags start with 'shm'): its report's path."""
    command = list(flags[:1]) if flags and flags[0] == "shm" else ["train"]
    rest = list(flags[1:]) if command == ["shm"] else list(flags)
    path = str(Path(directory) / name)
    args = [exe, *command, "--epochs", "1", "--train-samples", "2000", "--quiet", "--report", path, *rest]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return path


def help_text(exe, *command):
    done = subprocess.run([exe, *command, "--help"], capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr
