#!/usr/bin/python3
"""Figures and report pages from ptrain's files (docs/plots.md).

    ptrain plot FILE... -o OUT.png|.svg|.pdf     this program: ptrain_plot.py [plot] FILE... -o OUT
    ptrain report FILE... -o PAGE.html           this program: ptrain_plot.py report FILE... -o PAGE

What each input is comes from its content, never its name: a run report,
a metrics stream (JSON lines), a timeline (Chrome trace JSON), or one of the
CSV files ptrain and bench/ write, known by its header. It needs Debian's
python3-matplotlib (and numpy, which that brings) and the standard library.

For a program (and the tests): load() reads one file into a Source,
build_figure() draws sources into a matplotlib Figure, report_page() builds
the HTML page, main() is the command line.
"""

import argparse
import base64
import csv
import datetime
import html
import io
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import textwrap

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.lines
    import matplotlib.ticker
    import numpy as np
    from matplotlib.figure import Figure

    MATPLOTLIB_MISSING = None
except ImportError as missing:  # said in one line by main()
    MATPLOTLIB_MISSING = missing

EXIT_INPUT = 2  # as ptrain's own commands: the input is wrong
FIGURE_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
PAGE_SUFFIXES = (".html", ".htm")


class InputError(Exception):
    """Bad input: one line naming the file and what is wrong; exit 2."""


# --------------------------------------------------------------------------- reading


class Source:
    """One input file: its kind and what was read from it."""

    def __init__(self, path, kind, data):
        self.path = path
        self.kind = kind
        self.data = data

    @property
    def name(self):
        return os.path.basename(self.path)


# The CSV files known, by the first columns of their header (a later version
# may add columns after these). kind: (columns, what it is).
CSV_KINDS = {
    "sweep": ("strategy,threads,batch,lr,repetition,seed,stopped_by,reached_target,seconds_to_target,"
              "final_train_loss,test_accuracy,diverged,crashed,train_seconds,updates,gradients,updates_per_s,"
              "staleness_mean", "a ptrain sweep CSV"),
    "sweep-summary": ("strategy,threads,batch,lr,runs,reached_target,diverged,crashed,median_seconds_to_target",
                      "a ptrain sweep --summary-csv file"),
    "dgc-ablation": ("configuration,test_accuracy,delta_vs_dense,ratio,steady_ratio,samples_per_s",
                     "bench/dgc_ablation.sh's CSV"),
    "dgc-ablation-lm": ("configuration,test_perplexity,delta_vs_dense_percent,ratio,steady_ratio,samples_per_s",
                        "bench/dgc_ablation.sh's CSV of the LSTM"),
    "hybrid": ("peer,workers,batch,steps,samples_per_s", "bench/hybrid_vs_peers.sh's CSV"),
    "ps-strategies": ("strategy,samples_per_s,vs_no_straggler,test_accuracy_after_epochs,test_accuracy_after_time,"
                      "epochs_in_time,staleness_mean,staleness_p99,staleness_max,dropped",
                      "bench/ps_strategies.sh's CSV"),
    "allreduce": ("backend,algorithm,ranks,bytes,seconds,algbw_gbps,busbw_gbps", "a ptrain bench allreduce CSV"),
    "compress": ("codec,elements,encode_seconds,encode_gbps,decode_seconds,decode_gbps,wire_bytes,dense_bytes",
                 "a ptrain bench compress CSV"),
    "simulate": ("bandwidth_gbit,exchange,workers,compute_ms,codec_ms,exchange_ms,step_ms,samples_per_s,efficiency",
                 "a ptrain simulate CSV"),
    "overlap": ("backend,bucket,overlap,repeat,mean_step_ms,samples_per_s", "bench/overlap.sh's CSV"),
    "slow-network": ("rate,configuration,parameters,step_ms,samples_per_s", "bench/slow_network.sh's CSV"),
}

# Columns that must hold a number in every row (others may be empty, or text).
CSV_NUMBERS = {
    "sweep": ("threads", "batch", "lr", "repetition", "diverged", "crashed"),
    "sweep-summary": ("threads", "batch", "lr", "runs", "reached_target", "diverged", "crashed"),
    "dgc-ablation": ("test_accuracy", "ratio", "steady_ratio", "samples_per_s"),
    "dgc-ablation-lm": ("test_perplexity", "ratio", "steady_ratio", "samples_per_s"),
    "hybrid": ("workers", "batch", "samples_per_s"),
    "ps-strategies": ("samples_per_s", "test_accuracy_after_epochs", "test_accuracy_after_time", "staleness_mean"),
    "allreduce": ("ranks", "bytes"),
    "compress": ("elements", "encode_gbps"),
    "simulate": ("bandwidth_gbit", "workers", "samples_per_s", "efficiency"),
    "overlap": ("mean_step_ms",),
    "slow-network": ("samples_per_s",),
}

KIND_NAMES = {"report": "a run report", "metrics": "a metrics file", "timeline": "a timeline"}
KIND_NAMES.update({k: v[1] for k, v in CSV_KINDS.items()})


def load(path):
    """Reads one input and finds its kind by content; InputError names what is wrong."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file")
    except IsADirectoryError:
        raise InputError(f"{path}: a directory, not a file")
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start}); not a file ptrain wrote")
    if not text.strip():
        raise InputError(f"{path}: empty")
    if text.lstrip().startswith(("{", "[")):
        return _load_json(path, text)
    return _load_csv(path, text)


def _load_json(path, text):
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as e:
        first = text.lstrip().split("\n", 1)[0]
        try:
            head = json.loads(first)
        except json.JSONDecodeError:
            head = None
        if isinstance(head, dict) and "event" in head:
            return Source(path, "metrics", _read_metrics(path, text))
        raise InputError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})")
    if isinstance(whole, dict) and "schema_version" in whole and "plan" in whole:
        if not isinstance(whole["plan"], dict):
            raise InputError(f"{path}: its 'plan' is not an object; not a run report ptrain wrote")
        return Source(path, "report", whole)
    if isinstance(whole, dict) and whole.get("command") == "eval":
        raise InputError(f"{path}: an evaluation report (ptrain eval), which has no curves to draw; give run reports")
    if (isinstance(whole, dict) and "traceEvents" in whole) or (
            isinstance(whole, list) and whole and isinstance(whole[0], dict) and "ph" in whole[0]):
        return Source(path, "timeline", _read_timeline(path, whole))
    if isinstance(whole, dict) and "event" in whole:  # a metrics file of one line
        return Source(path, "metrics", _read_metrics(path, text))
    raise InputError(f"{path}: JSON, but not a run report (schema_version, plan), a metrics file (event lines) "
                     "or a timeline (traceEvents)")


def _number(value, where, allow_none=True):
    if value is None and allow_none:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} is {json.dumps(value)[:40]}, not a number")
    return float(value)


def _list_of_objects(container, key, where):
    value = container.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"{where}: '{key}' is not a list of objects")
    return value


def _object(container, key, where):
    value = container.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: '{key}' is not an object")
    return value


def _read_metrics(path, text):
    """The events of a metrics stream; a last line cut short (a killed run) is left out."""
    lines = text.split("\n")
    events = []
    last = max(i for i, line in enumerate(lines) if line.strip())
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as e:
            if i == last:  # written while the run was killed
                break
            raise InputError(f"{path}: line {i + 1} is not valid JSON ({e.msg}); a metrics file has one object a line")
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            raise InputError(f"{path}: line {i + 1} is not an object with an 'event'; not a metrics file")
        event["_line"] = i + 1
        events.append(event)
    if not events:
        raise InputError(f"{path}: no complete line; not a metrics file")
    return events


def _read_timeline(path, whole):
    events = whole["traceEvents"] if isinstance(whole, dict) else whole
    if not isinstance(events, list):
        raise InputError(f"{path}: 'traceEvents' is not a list")
    process_names, thread_names, spans = {}, {}, []
    for i, e in enumerate(events):
        where = f"{path}: traceEvents[{i}]"
        if not isinstance(e, dict):
            raise InputError(f"{where} is not an object")
        ph = e.get("ph")
        pid = e.get("pid", 0)
        tid = e.get("tid", 0)
        if ph == "M":
            name = (e.get("args") or {}).get("name") if isinstance(e.get("args"), dict) else None
            if e.get("name") == "process_name" and name is not None:
                process_names[pid] = str(name)
            elif e.get("name") == "thread_name" and name is not None:
                thread_names[(pid, tid)] = str(name)
        elif ph == "X":
            ts = _number(e.get("ts"), where + ".ts", allow_none=False)
            dur = _number(e.get("dur", 0), where + ".dur", allow_none=False)
            if not (math.isfinite(ts) and math.isfinite(dur)) or dur < 0:
                raise InputError(f"{where}: ts {ts} or dur {dur} is not a time")
            if not isinstance(pid, (int, str)) or not isinstance(tid, (int, str)):
                raise InputError(f"{where}: pid or tid is neither a number nor a name")
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            spans.append({"name": str(e.get("name", "?")), "ts": ts, "dur": dur, "pid": pid, "tid": tid,
                          "args": args})
    if not spans:
        raise InputError(f"{path}: a timeline without any span (\"ph\": \"X\" events)")
    truncated = bool(isinstance(whole, dict) and isinstance(whole.get("otherData"), dict)
                     and whole["otherData"].get("truncated"))
    return {"spans": spans, "process_names": process_names, "thread_names": thread_names, "truncated": truncated}


def _load_csv(path, text):
    lines = text.split("\n")
    header = lines[0].rstrip("\r")
    kind = None
    for k, (columns, _) in CSV_KINDS.items():
        if header == columns or header.startswith(columns + ","):
            kind = k
            break
    if kind is None:
        shown = header if len(header) <= 80 else header[:80] + "..."
        raise InputError(f"{path}: a header ptrain plot does not know ('{shown}'); it reads reports, metrics, "
                         "timelines and the CSVs of ptrain sweep, simulate, bench and bench/*.sh")
    body = text
    if kind == "sweep" and not text.endswith("\n"):
        body = text[:text.rfind("\n") + 1]  # a row cut short while the sweep wrote it
    try:
        rows = list(csv.reader(io.StringIO(body)))
    except csv.Error as e:
        raise InputError(f"{path}: not valid CSV ({e})")
    names = rows[0]
    out = []
    for number, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(names):
            raise InputError(f"{path}: line {number} has {len(row)} fields, the header {len(names)}")
        record = dict(zip(names, row))
        record["_line"] = number
        for column in CSV_NUMBERS[kind]:
            record[column] = _csv_number(record[column], path, number, column, required=True)
        out.append(record)
    if not out:
        raise InputError(f"{path}: no rows under the header")
    return Source(path, kind, out)


def _csv_number(text, path, line, column, required=False):
    if text == "" and not required:
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{path}: line {line}: column {column} is '{text[:40]}', not a number")


def csv_value(record, column, source):
    """A number from a row, NaN when empty; a bad one names the file and line."""
    value = record.get(column, "")
    if isinstance(value, float):
        return value
    return _csv_number(value, source.path, record["_line"], column)


# --------------------------------------------------------------------------- runs


class Run:
    """What is drawn of one training run, from its report or its metrics file."""

    def __init__(self, source):
        self.source = source
        self.path = source.path
        self.plan = None
        self.task = "classification"
        self.curve = []  # (step, seconds, loss)
        self.epochs = []  # dicts: epoch, steps, seconds (each epoch's), train_loss, test_loss, test_accuracy, ...
        self.samples_per_s = math.nan
        self.histogram = None  # staleness counts, index = staleness
        self.histogram_of = ""
        self.staleness_mean = math.nan
        self.workers = None
        self.steps = None
        self.final_test_accuracy = math.nan
        self.final_train_loss = math.nan
        self.compression_ratio = math.nan
        self.outcome = ""
        self.notes = {}
        self.recoveries = []
        self.curves_from = None  # the metrics file a report's curves came from
        self.label = source.name

    @property
    def strategy(self):
        return ((self.plan or {}).get("strategy") or {}).get("name", "")

    @property
    def codec(self):
        return ((self.plan or {}).get("codec") or {}).get("name", "")

    @property
    def language_model(self):
        return self.task == "language-model"

    def final_test_perplexity(self):
        if not self.epochs:
            return math.nan
        return self.epochs[-1]["test_perplexity"]

    def points(self, x):
        """The loss curve against steps or seconds: (xs, losses)."""
        index = 0 if x == "steps" else 1
        pts = [(p[index], p[2]) for p in self.curve if math.isfinite(p[index])]
        return [p[0] for p in pts], [p[1] for p in pts]

    def epoch_points(self, x, metric):
        """The test metric at each epoch's end, against steps or seconds so far: (xs, values)."""
        xs, ys, total = [], [], 0.0
        for e in self.epochs:
            total += e["steps" if x == "steps" else "seconds"]
            value = e[metric]
            if math.isfinite(total) and math.isfinite(value):
                xs.append(total)
                ys.append(value)
        return xs, ys


def _epoch(e, where):
    out = {}
    for key in ("epoch", "steps", "seconds", "train_loss", "test_loss", "test_accuracy", "test_perplexity",
                "samples_per_s"):
        out[key] = _number(e.get(key), f"{where}.{key}")
    if not math.isfinite(out["test_perplexity"]) and math.isfinite(out["test_loss"]):
        out["test_perplexity"] = math.exp(min(out["test_loss"], 700.0))
    return out


def run_from_report(source):
    r = source.data
    run = Run(source)
    path = source.path
    run.plan = r["plan"]
    info = _object(r, "run", path)
    run.task = info.get("task") or "classification"
    run.workers = info.get("workers", (run.plan.get("run") or {}).get("workers"))
    for i, p in enumerate(_list_of_objects(r, "loss_curve", path)):
        where = f"{path}: loss_curve[{i}]"
        run.curve.append((_number(p.get("step"), where + ".step"), _number(p.get("seconds"), where + ".seconds"),
                          _number(p.get("loss"), where + ".loss")))
    run.epochs = [_epoch(e, f"{path}: epochs[{i}]") for i, e in enumerate(_list_of_objects(r, "epochs", path))]
    summary = _object(r, "summary", path)
    run.samples_per_s = _number(summary.get("samples_per_s"), f"{path}: summary.samples_per_s")
    run.steps = summary.get("steps")
    run.final_test_accuracy = _number(summary.get("final_test_accuracy"), f"{path}: summary.final_test_accuracy")
    run.final_train_loss = _number(summary.get("final_train_loss"), f"{path}: summary.final_train_loss")
    notes = summary.get("notes")
    run.notes = notes if isinstance(notes, dict) else {}
    compression = _object(r, "compression", path)
    run.compression_ratio = _number(compression.get("ratio"), f"{path}: compression.ratio")
    for section, what in (("parameter_server", "parameter server"), ("shared_memory", "shared memory")):
        s = _object(r, section, path)
        if not s:
            continue
        run.staleness_mean = _number(s.get("staleness_mean"), f"{path}: {section}.staleness_mean")
        hist = s.get("staleness_histogram")
        if hist is not None:
            if not isinstance(hist, list):
                raise InputError(f"{path}: {section}.staleness_histogram is not a list")
            run.histogram = [_number(v, f"{path}: {section}.staleness_histogram[{i}]") for i, v in enumerate(hist)]
            run.histogram_of = what
    outcome = _object(r, "outcome", path)
    run.outcome = str(outcome.get("status", ""))
    if outcome.get("diverged_why"):
        run.outcome += f" ({outcome['diverged_why']})"
    recoveries = outcome.get("recoveries")
    run.recoveries = recoveries if isinstance(recoveries, list) else []
    return run


def run_from_metrics(source):
    run = Run(source)
    path = source.path
    end = None
    for e in source.data:
        where = f"{path}: line {e['_line']}"
        kind = e["event"]
        if kind == "start":
            if isinstance(e.get("plan"), dict):
                run.plan = e["plan"]
            run.task = e.get("task") or run.task
            run.workers = e.get("workers", run.workers)
        elif kind in ("step", "loss_check"):
            step = e.get("step", e.get("updates"))  # loss_check: the updates applied (progress lines say updates)
            run.curve.append((_number(step, where + ".step"), _number(e.get("seconds"), where + ".seconds"),
                              _number(e.get("loss"), where + ".loss")))
        elif kind == "epoch":
            run.epochs.append(_epoch(e, where))
        elif kind == "recovery":
            run.recoveries.append(e)
        elif kind == "end":
            end = e
        elif kind == "error":
            run.outcome = f"error: {e.get('message', '')}"
    if end is not None:
        summary = end.get("summary") if isinstance(end.get("summary"), dict) else end  # or its figures inline
        where = f"{path}: line {end['_line']}"
        run.samples_per_s = _number(summary.get("samples_per_s"), where + ".summary.samples_per_s")
        run.steps = summary.get("steps", end.get("steps"))
        run.final_test_accuracy = _number(summary.get("final_test_accuracy"), where + ".summary.final_test_accuracy")
        run.final_train_loss = _number(summary.get("final_train_loss"), where + ".summary.final_train_loss")
        run.outcome = str(end.get("status", end.get("outcome", "ended")))
    elif not run.outcome:
        run.outcome = "no end line (killed, or still running)"
    if run.epochs:
        last = run.epochs[-1]
        if not math.isfinite(run.samples_per_s):
            run.samples_per_s = last["samples_per_s"]
        if not math.isfinite(run.final_test_accuracy):
            run.final_test_accuracy = last["test_accuracy"]
        if not math.isfinite(run.final_train_loss):
            run.final_train_loss = last["train_loss"]
        if run.steps is None:
            run.steps = int(sum(e["steps"] for e in run.epochs if math.isfinite(e["steps"])))
    if run.steps is None and run.curve:
        run.steps = int(run.curve[-1][0])
    if run.plan is not None and run.workers is None:
        run.workers = (run.plan.get("run") or {}).get("workers")
    return run


def resolve_beside(name, report_path):
    """A path a report names: as is when absolute, else beside the report, then from the current directory."""
    if os.path.isabs(name):
        return name if os.path.exists(name) else None
    for base in (os.path.dirname(os.path.abspath(report_path)), os.getcwd()):
        candidate = os.path.join(base, name)
        if os.path.exists(candidate):
            return candidate
    return None


def runs_of(sources, labels=None):
    runs = []
    for s in sources:
        if s.kind == "report":
            runs.append(run_from_report(s))
        elif s.kind == "metrics":
            runs.append(run_from_metrics(s))
    if labels is not None:
        if len(labels) != len(runs):
            raise InputError(f"--labels: {len(labels)} label(s) for {len(runs)} run(s) (reports and metrics files)")
        for run, label in zip(runs, labels):
            run.label = label
    else:
        for run, label in zip(runs, run_labels(runs)):
            run.label = label
    return runs


def adopt_metrics_curves(run):
    """A report without curves (its run stopped early) takes them from its metrics file, when there is one."""
    if run.curve or run.epochs or run.source.kind != "report":
        return None
    name = ((run.plan or {}).get("run") or {}).get("metrics")
    if not name:
        return None
    found = resolve_beside(name, run.path)
    if found is None:
        return f"its metrics file {name} is not there"
    try:
        metrics = load(found)
    except InputError as e:
        return str(e)
    if metrics.kind != "metrics":
        return f"{found} is {KIND_NAMES[metrics.kind]}, not a metrics file"
    other = run_from_metrics(metrics)
    run.curve, run.epochs, run.curves_from = other.curve, other.epochs, found
    return None


# --------------------------------------------------------------------------- labels


# Plan fields that name where a run wrote things: a difference there is not a difference of the run.
OUTPUT_FIELDS = {"run.metrics", "run.timeline", "run.save_model", "run.checkpoint_dir", "run.progress_lines"}


def flatten(plan, prefix=""):
    out = {}
    for key, value in plan.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list):
            out[name] = json.dumps(value, separators=(",", ":"))
        else:
            out[name] = value
    return out


def plan_differences(runs):
    """The plan fields whose values differ between the runs: [(field, [value per run])]."""
    flat = [flatten(r.plan) if r.plan else {} for r in runs]
    keys = []
    for f in flat:
        keys.extend(k for k in f if k not in keys)
    out = []
    for k in keys:
        values = [f.get(k) for f in flat]
        if any(v != values[0] for v in values[1:]):
            out.append((k, values))
    return out


def show_value(value):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def short_field(key):
    parts = key.split(".")
    return parts[0] if parts[-1] == "name" else parts[-1]


def run_labels(runs):
    """Each run named by what differs in its plan (a section's kind, not the fields that come with it)."""
    if not runs:
        return []
    if len(runs) == 1:
        run = runs[0]
        if run.plan:
            return [f"strategy={run.strategy or '?'}, codec={run.codec or 'none'}"]
        return [run.source.name]
    diffs = [(k, v) for k, v in plan_differences(runs) if k not in OUTPUT_FIELDS]
    kinds_differ = {k.split(".")[0] for k, _ in diffs if k.endswith(".name") and k.count(".") == 1}
    shown = [(k, v) for k, v in diffs if k.split(".")[0] not in kinds_differ or k.endswith(".name")]
    # The kinds first (strategy, codec, then the others), then the fields in the plan's order.
    first = ["strategy.name", "codec.name"]
    shown.sort(key=lambda kv: (first.index(kv[0]) if kv[0] in first else 2 if kv[0].endswith(".name") else 3))
    names = [short_field(k) for k, _ in shown]
    labels = []
    for i, run in enumerate(runs):
        parts = []
        for (k, values), name in zip(shown, names):
            if values[i] is None and k.split(".")[0] in kinds_differ:
                continue
            parts.append(f"{name if names.count(name) == 1 else k}={show_value(values[i])}")
        label = ", ".join(parts) if run.plan else ""
        if len(label) > 100:
            label = label[:97] + "..."
        labels.append(label or run.source.name)
    for i, label in enumerate(labels):  # the same label twice: the file tells them apart
        if labels.count(label) > 1 and label != runs[i].source.name:
            labels[i] = f"{label} ({runs[i].source.name})"
    return labels


# --------------------------------------------------------------------------- panels


class Panel:
    """One axes to draw: draw(ax, fig) fills it; wide ones take a whole row."""

    def __init__(self, name, draw, wide=False, height=1.0):
        self.name = name
        self.draw = draw
        self.wide = wide
        self.height = height


def _color(i):
    return matplotlib.colormaps["tab10"](i % 10)


def _wrap(text, width=40):
    return "\n".join(textwrap.wrap(text, width)) or text


def run_panels(runs, xs=("steps", "seconds")):
    panels = []
    if runs:
        def draw(ax, fig):
            ax.axis("off")
            handles = [matplotlib.lines.Line2D([], [], color=_color(i), linewidth=3, label=run.label)
                       for i, run in enumerate(runs)]
            ax.legend(handles=handles, loc="center", frameon=False, ncol=2 if len(runs) > 6 else 1,
                      title="runs" if len(runs) > 1 else "run")
        panels.append(Panel("legend", draw, wide=True, height=0.12 + 0.055 * (len(runs) if len(runs) <= 6
                                                                                 else (len(runs) + 1) // 2)))
    x_title = {"steps": "steps", "seconds": "seconds of training"}
    for x in xs:
        def draw(ax, fig, x=x):
            drawn = 0
            for i, run in enumerate(runs):
                px, py = run.points(x)
                if px:
                    ax.plot(px, py, color=_color(i), label=run.label)
                    drawn += 1
            ax.set_xlabel(x_title[x])
            ax.set_ylabel("training loss")
            ax.set_title(f"training loss against {x}")
            if drawn == 0:
                ax.text(0.5, 0.5, "no loss curve", ha="center", va="center", transform=ax.transAxes)
        if any(r.curve for r in runs):
            panels.append(Panel(f"loss:{x}", draw))
    metrics = []
    if any(r.epochs and not r.language_model for r in runs):
        metrics.append(("test_accuracy", "test accuracy", lambda r: not r.language_model))
    if any(r.epochs and r.language_model for r in runs):
        metrics.append(("test_perplexity", "test perplexity", lambda r: r.language_model))
    for metric, title, wanted in metrics:
        for x in xs:
            def draw(ax, fig, x=x, metric=metric, title=title, wanted=wanted):
                drawn = 0
                for i, run in enumerate(runs):
                    if not wanted(run):
                        continue
                    px, py = run.epoch_points(x, metric)
                    if px:
                        ax.plot(px, py, marker="o", color=_color(i), label=run.label)
                        drawn += 1
                ax.set_xlabel(x_title[x] + " (epoch ends)")
                ax.set_ylabel(title)
                ax.set_title(f"{title} against {x}")
                if drawn == 0:
                    ax.text(0.5, 0.5, "no epoch ended", ha="center", va="center", transform=ax.transAxes)
            panels.append(Panel(f"{metric}:{x}", draw))
    for i, run in enumerate(runs):
        if run.histogram is None:
            continue
        def draw(ax, fig, run=run, i=i):
            ax.bar(range(len(run.histogram)), run.histogram, color=_color(i), label=run.label)
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            ax.set_xlabel("staleness (updates between read and apply)")
            ax.set_ylabel("gradients")
            mean = f", mean {run.staleness_mean:.2f}" if math.isfinite(run.staleness_mean) else ""
            ax.set_title(f"staleness ({run.histogram_of}{mean})\n{_wrap(run.label, 60)}", fontsize="medium")
        panels.append(Panel(f"staleness:{i}", draw))
    if any(math.isfinite(r.samples_per_s) for r in runs):
        def draw(ax, fig):
            shown = [(i, r) for i, r in enumerate(runs) if math.isfinite(r.samples_per_s)]
            ys = list(range(len(shown)))
            ax.barh(ys, [r.samples_per_s for _, r in shown], color=[_color(i) for i, _ in shown])
            ax.set_yticks(ys, [_wrap(r.label) for _, r in shown], fontsize="small")
            ax.invert_yaxis()
            ax.set_xlabel("samples/s")
            ax.set_title("throughput")
        panels.append(Panel("samples_per_s", draw, height=max(0.6, 0.25 + 0.12 * len(runs))))
    return panels


def _median(values):
    values = [v for v in values if math.isfinite(v)]
    return statistics.median(values) if values else math.nan


def sweep_cells(source):
    """Per strategy, per (threads, batch): the value drawn, the failures, and how the value was chosen."""
    rows = source.data
    if source.kind == "sweep-summary":
        timed = True  # it has no losses
    else:
        timed = any(math.isfinite(csv_value(r, "seconds_to_target", source)) for r in rows)
    by_strategy = {}
    for r in rows:
        cell = by_strategy.setdefault(r["strategy"], {}).setdefault((int(r["threads"]), int(r["batch"])), {})
        cell.setdefault(r["lr"], []).append(r)
    out = {}
    for strategy, cells in by_strategy.items():
        result = {}
        for key, by_lr in cells.items():
            best, failed, staleness = math.nan, 0, []
            for lr_rows in by_lr.values():
                if source.kind == "sweep-summary":
                    r = lr_rows[0]
                    value = csv_value(r, "median_seconds_to_target", source)
                    failed += int(r["diverged"] + r["crashed"])
                else:
                    ok = [r for r in lr_rows if not r["diverged"] and not r["crashed"]]
                    failed += len(lr_rows) - len(ok)
                    if timed:  # as ptrain sweep --summary-csv: a run that did not reach the target counts as never
                        times = [csv_value(r, "seconds_to_target", source) for r in lr_rows]
                        value = statistics.median([t if any(r is o for o in ok) and math.isfinite(t) else math.inf
                                                   for t, r in zip(times, lr_rows)])
                        value = value if math.isfinite(value) else math.nan
                    else:
                        value = _median([csv_value(r, "final_train_loss", source) for r in ok])
                    staleness.extend(csv_value(r, "staleness_mean", source) for r in ok)
                if math.isfinite(value) and not value >= best:
                    best = value
            result[key] = {"value": best, "failed": failed, "staleness": _median(staleness)}
        out[strategy] = result
    return out, timed


def _heat_map(ax, fig, cells, key, title, unit, cmap, limits):
    threads = sorted({k[0] for k in cells})
    batches = sorted({k[1] for k in cells})
    grid = np.full((len(batches), len(threads)), np.nan)
    for (t, b), c in cells.items():
        grid[batches.index(b), threads.index(t)] = c[key]
    colors = matplotlib.colormaps[cmap].copy()
    colors.set_bad("#dddddd")
    image = ax.imshow(np.ma.masked_invalid(grid), origin="lower", aspect="auto", cmap=colors,
                      vmin=limits[0], vmax=limits[1])
    ax.set_xticks(range(len(threads)), [str(t) for t in threads])
    ax.set_yticks(range(len(batches)), [str(b) for b in batches])
    ax.set_xlabel("threads")
    ax.set_ylabel("batch")
    ax.set_title(title, fontsize="medium")
    for (t, b), c in cells.items():
        x, y = threads.index(t), batches.index(b)
        value = c[key]
        if math.isfinite(value):
            r, g, bl, _ = image.cmap(image.norm(value))
            dark = 0.299 * r + 0.587 * g + 0.114 * bl < 0.5
            ax.text(x, y, f"{value:.3g}{unit}", ha="center", va="center", fontsize="small",
                    color="white" if dark else "black")
        else:
            ax.text(x, y, "none" if key == "value" else "-", ha="center", va="center", fontsize="small")
    failed = [(threads.index(t), batches.index(b), c["failed"]) for (t, b), c in cells.items() if c["failed"]]
    if failed and key == "value":
        ax.plot([f[0] for f in failed], [f[1] for f in failed], linestyle="none", marker="x", markersize=14,
                color="red", label="diverged or crashed")
        for x, y, n in failed:
            ax.text(x + 0.3, y + 0.3, f"x{n}", color="red", ha="center", va="center", fontsize="small")
    if np.isfinite(grid).any():
        fig.colorbar(image, ax=ax, shrink=0.85)


def _limits(cells, key):
    """One colour scale for every strategy of a file, so that their maps compare."""
    values = [c[key] for by_cell in cells.values() for c in by_cell.values() if math.isfinite(c[key])]
    return (min(values), max(values)) if values else (None, None)


def sweep_panels(source, several):
    cells, timed = sweep_cells(source)
    suffix = f" ({source.name})" if several else ""
    panels = []
    if timed:
        what = "median seconds to the target loss, best lr"
    else:
        what = "median final training loss, best lr\n(no run reached a target loss)"
    values, staleness = _limits(cells, "value"), _limits(cells, "staleness")
    for strategy, c in cells.items():
        panels.append(Panel(f"sweep:{strategy}:time" if timed else f"sweep:{strategy}:loss",
                            lambda ax, fig, c=c, s=strategy: _heat_map(
                                ax, fig, c, "value", f"{s}: {what}{suffix}", " s" if timed else "", "viridis_r",
                                values)))
        if source.kind == "sweep":
            panels.append(Panel(f"sweep:{strategy}:staleness",
                                lambda ax, fig, c=c, s=strategy: _heat_map(
                                    ax, fig, c, "staleness", f"{s}: staleness mean (median){suffix}", "", "magma",
                                    staleness)))
    return panels


def _barh(ax, labels, series, xlabel, title, log=False):
    """Grouped horizontal bars: series = [(name, values)], one bar per label in each."""
    ys = np.arange(len(labels))
    height = 0.8 / max(1, len(series))
    for j, (name, values) in enumerate(series):
        offset = (j - (len(series) - 1) / 2) * height
        ax.barh(ys + offset, values, height=height, label=name,
                color=_color(j))
    ax.set_yticks(ys, labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="medium")
    if log:
        ax.set_xscale("log")
    if len(series) > 1:
        ax.legend(fontsize="small")


def _rows_height(n):
    return max(0.6, 0.3 + 0.1 * n)


def dgc_panels(source, suffix):
    rows = source.data
    labels = [r["configuration"] for r in rows]
    if source.kind == "dgc-ablation-lm":  # a run that did not converge has no perplexity: no bar
        figure = Panel("dgc:perplexity", lambda ax, fig: _barh(
            ax, labels, [("test perplexity", [r["test_perplexity"] for r in rows])],
            "test perplexity (lower is better; none: did not converge)", "test perplexity" + suffix),
            height=_rows_height(len(rows)))
    else:
        figure = Panel("dgc:accuracy", lambda ax, fig: _barh(
            ax, labels, [("test accuracy", [r["test_accuracy"] for r in rows])],
            "test accuracy (%)", "test accuracy" + suffix), height=_rows_height(len(rows)))
    return [
        figure,
        Panel("dgc:ratio", lambda ax, fig: _barh(ax, labels, [("whole run", [r["ratio"] for r in rows]),
                                                            ("after warm-up", [r["steady_ratio"] for r in rows])],
                                                "compression ratio (dense bytes / bytes sent)",
                                                "compression ratio" + suffix, log=True),
              height=_rows_height(len(rows))),
    ]


def ps_strategy_panels(source, suffix):
    rows = source.data
    labels = [r["strategy"] for r in rows]
    h = _rows_height(len(rows))
    return [
        Panel("ps:samples_per_s", lambda ax, fig: _barh(ax, labels, [("samples/s", [r["samples_per_s"] for r in rows])],
                                                      "samples/s", "throughput" + suffix), height=h),
        Panel("ps:accuracy", lambda ax, fig: _barh(
            ax, labels, [("after the epochs", [r["test_accuracy_after_epochs"] for r in rows]),
                         ("after the time limit", [r["test_accuracy_after_time"] for r in rows])],
            "test accuracy (%)", "test accuracy" + suffix), height=h),
        Panel("ps:staleness", lambda ax, fig: _barh(ax, labels, [("mean", [r["staleness_mean"] for r in rows])],
                                                  "staleness mean (updates)", "staleness" + suffix), height=h),
    ]


def simulate_panels(source, suffix):
    rows = source.data
    panels = []
    for gbit in sorted({r["bandwidth_gbit"] for r in rows}):
        def draw(ax, fig, gbit=gbit):
            exchanges = list(dict.fromkeys(r["exchange"] for r in rows if r["bandwidth_gbit"] == gbit))
            top = 1
            for j, exchange in enumerate(exchanges):
                mine = sorted((r for r in rows if r["bandwidth_gbit"] == gbit and r["exchange"] == exchange),
                              key=lambda r: r["workers"])
                one = [r["samples_per_s"] for r in mine if r["workers"] == 1]
                if one and one[0] > 0:
                    speedup = [r["samples_per_s"] / one[0] for r in mine]
                else:
                    speedup = [r["efficiency"] * r["workers"] for r in mine]
                workers = [r["workers"] for r in mine]
                top = max([top] + workers)
                ax.plot(workers, speedup, marker="o", color=_color(j), label=exchange)
            ax.plot([1, top], [1, top], linestyle=":", color="gray", label="linear")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.set_xlabel("workers")
            ax.set_ylabel("speed-up over 1 worker")
            ax.set_title(f"predicted speed-up at {gbit:g} Gbit/s{suffix}", fontsize="medium")
            ax.legend(fontsize="small")
        panels.append(Panel(f"simulate:{gbit:g}", draw))
    return panels


def hybrid_panels(source, suffix):
    rows = source.data
    panels = []
    for batch in sorted({r["batch"] for r in rows}):
        def draw(ax, fig, batch=batch):
            peers = list(dict.fromkeys(r["peer"] for r in rows if r["batch"] == batch))
            for j, peer in enumerate(peers):
                by_workers = {}
                for r in rows:
                    if r["batch"] == batch and r["peer"] == peer:
                        by_workers.setdefault(r["workers"], []).append(r["samples_per_s"])
                workers = sorted(by_workers)
                ax.plot(workers, [statistics.median(by_workers[w]) for w in workers], marker="o", color=_color(j),
                        label=peer)
            ax.set_xlabel("workers")
            ax.set_ylabel("samples/s (median of repeats)")
            ax.set_title(f"throughput, batch {batch:g} per worker{suffix}", fontsize="medium")
            ax.legend(fontsize="small")
        panels.append(Panel(f"hybrid:{batch:g}", draw))
    return panels


def _bytes(value):
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if value >= size:
            return f"{value / size:g} {unit}"
    return f"{value:g} B"


def allreduce_panels(source, suffix):
    rows = source.data
    timed = [r for r in rows if r["algorithm"] != "stream-copy"]
    copies = [r for r in rows if r["algorithm"] == "stream-copy"]
    several = {k: len({r[k] for r in timed}) > 1 for k in ("backend", "ranks")}

    def draw(ax, fig):
        series = {}
        for r in timed:
            name = r["algorithm"]
            if several["backend"]:
                name += f" {r['backend']}"
            if several["ranks"]:
                name += f" x{r['ranks']:g}"
            series.setdefault(name, []).append((r["bytes"], csv_value(r, "busbw_gbps", source)))
        for j, (name, points) in enumerate(series.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=_color(j), label=name)
        for r in copies:
            value = csv_value(r, "algbw_gbps", source)
            if math.isfinite(value):
                ax.axhline(value, linestyle=":", color="gray", label=f"memory copy ({r['backend']})")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: _bytes(v)))
        ax.set_xlabel("bytes all-reduced")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title("all-reduce bus bandwidth" + suffix, fontsize="medium")
        ax.legend(fontsize="small")
    return [Panel("allreduce", draw)]


def compress_panels(source, suffix):
    rows = source.data
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    sizes = sorted({r["elements"] for r in rows})
    panels = []
    for column, what in (("encode_gbps", "encode"), ("decode_gbps", "decode")):
        def draw(ax, fig, column=column, what=what):
            series = []
            for size in sizes:
                values = []
                for codec in codecs:
                    match = [csv_value(r, column, source) for r in rows if r["codec"] == codec and r["elements"] == size]
                    values.append(match[0] if match else math.nan)
                series.append((f"{size:,.0f} elements", values))
            _barh(ax, codecs, series, f"{what} throughput (GB/s of fp32 gradient, log scale)",
                  f"codec {what} throughput on one core{suffix}", log=True)
        panels.append(Panel(f"compress:{what}", draw, height=_rows_height(len(codecs) * len(sizes))))
    return panels


def overlap_panels(source, suffix):
    rows = source.data
    groups = list(dict.fromkeys((r["backend"], r["bucket"]) for r in rows))
    labels = [f"{b}, bucket {k}" for b, k in groups]
    series = []
    for setting in dict.fromkeys(r["overlap"] for r in rows):
        series.append((setting, [_median([r["mean_step_ms"] for r in rows if (r["backend"], r["bucket"]) == g
                                          and r["overlap"] == setting]) for g in groups]))
    return [Panel("overlap", lambda ax, fig: _barh(ax, labels, series, "mean step (ms, median of repeats)",
                                                   "step time, overlap on and off" + suffix),
                  height=_rows_height(len(groups) * len(series)))]


def slow_network_panels(source, suffix):
    rows = source.data
    configurations = list(dict.fromkeys(r["configuration"] for r in rows))
    series = [(f"rate {rate}", [next((r["samples_per_s"] for r in rows if r["rate"] == rate
                                      and r["configuration"] == c), math.nan) for c in configurations])
              for rate in dict.fromkeys(r["rate"] for r in rows)]
    return [Panel("slow-network", lambda ax, fig: _barh(ax, configurations, series, "samples/s",
                                                        "throughput on a slow network" + suffix),
                  height=_rows_height(len(configurations) * len(series)))]


# The spans a timeline names, each with a colour of its own in every figure; others take the unused ones.
SPAN_COLORS = {
    "step": "#dddddd", "forward": "#1f77b4", "backward": "#ff7f0e", "wait": "#d62728", "optimizer": "#2ca02c",
    "encode": "#9467bd", "all-reduce": "#8c564b", "decode": "#e377c2", "push": "#bcbd22", "pull": "#17becf",
    "straggler delay": "#444444", "checkpoint": "#7f7f7f", "evaluation": "#aec7e8", "apply": "#98df8a",
    "load batch": "#c5b0d5",
}
SPARE_COLORS = ["#ffbb78", "#ff9896", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#393b79", "#637939", "#8c6d31",
                "#843c39"]


def _span_color(name, order):
    if name in SPAN_COLORS:
        return SPAN_COLORS[name]
    others = [n for n in order if n not in SPAN_COLORS]
    return SPARE_COLORS[others.index(name) % len(SPARE_COLORS)]


def timeline_tracks(data):
    """The tracks in order: [((pid, tid), label)]."""
    keys = sorted({(s["pid"], s["tid"]) for s in data["spans"]}, key=lambda k: (str(type(k[0])), k[0], str(k[1])))
    pids = {k[0] for k in keys}
    out = []
    for pid, tid in keys:
        name = data["thread_names"].get((pid, tid), f"track {tid}")
        if len(pids) > 1:
            name = f"{data['process_names'].get(pid, f'process {pid}')}: {name}"
        out.append(((pid, tid), name))
    return out


def default_window(data):
    """The steps after the first (warm-up): the 2nd to the 4th step of the first worker track, in ms."""
    tracks = timeline_tracks(data)
    steps_of = {}
    for s in data["spans"]:
        if s["name"] == "step":
            steps_of.setdefault((s["pid"], s["tid"]), []).append(s)
    candidates = [(k, n) for k, n in tracks if k in steps_of]
    workers = [(k, n) for k, n in candidates if n.split(": ")[-1].startswith("worker") and "comm" not in n]
    chosen = (workers or candidates or [None])[0]
    if chosen is None:
        start = min(s["ts"] for s in data["spans"])
        end = max(s["ts"] + s["dur"] for s in data["spans"])
        return start / 1000, end / 1000
    steps = sorted(steps_of[chosen[0]], key=lambda s: s["ts"])
    first = steps[1] if len(steps) > 1 else steps[0]
    last = steps[min(3, len(steps) - 1)]
    return first["ts"] / 1000, (last["ts"] + last["dur"]) / 1000


def gantt_rows(data, window):
    """The spans in the window as rows: [(label, [(name, start_ms, end_ms)])], nested spans one row deeper."""
    w0, w1 = window
    rows = []
    for key, label in timeline_tracks(data):
        spans = sorted((s for s in data["spans"] if (s["pid"], s["tid"]) == key),
                       key=lambda s: (s["ts"], -s["dur"]))
        lanes, open_ends = [], []
        for s in spans:
            start, end = s["ts"], s["ts"] + s["dur"]
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            depth = len(open_ends)
            open_ends.append(end)
            if end / 1000 < w0 or start / 1000 > w1:
                continue
            while len(lanes) <= depth:
                lanes.append([])
            lanes[depth].append((s["name"], max(start / 1000, w0), min(end / 1000, w1)))
        for depth, lane in enumerate(lanes):
            if lane:
                rows.append((label if depth == 0 else "", lane))
    return rows


def timeline_panel(source, window, suffix):
    data = source.data
    w = window or default_window(data)
    rows = gantt_rows(data, w)

    def draw(ax, fig):
        order = []
        for _, lane in rows:
            order.extend(n for n, _, _ in lane if n not in order)
        for name in order:
            ys, lefts, widths = [], [], []
            for y, (_, lane) in enumerate(rows):
                for n, a, b in lane:
                    if n == name:
                        ys.append(y)
                        lefts.append(a)
                        widths.append(b - a)
            ax.barh(ys, widths, left=lefts, height=0.8, color=_span_color(name, order), label=name,
                    edgecolor="#555555" if name == "step" else "none", linewidth=0.5)
        ax.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize="small")
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlim(w[0], w[1])
        ax.set_xlabel("ms since the run started")
        how = "--window" if window else "steps 2 to 4 of the first worker"
        cut = ", the timeline was cut short (truncated)" if data["truncated"] else ""
        ax.set_title(f"timeline {w[0]:.1f}-{w[1]:.1f} ms ({how}{cut}){suffix}", fontsize="medium")
        if not rows:
            ax.text(0.5, 0.5, "no span in this window", ha="center", va="center", transform=ax.transAxes)
        if order:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return Panel("timeline", draw, wide=True, height=max(0.8, 0.3 + 0.09 * len(rows)))


CSV_PANELS = {
    "dgc-ablation": dgc_panels,
    "dgc-ablation-lm": dgc_panels,
    "ps-strategies": ps_strategy_panels,
    "simulate": simulate_panels,
    "hybrid": hybrid_panels,
    "allreduce": allreduce_panels,
    "compress": compress_panels,
    "overlap": overlap_panels,
    "slow-network": slow_network_panels,
}


class Options:
    def __init__(self, title=None, x=None, window=None, labels=None):
        self.title = title
        self.x = x  # None: steps and seconds
        self.window = window  # (start_ms, end_ms) or None
        self.labels = labels


def panels_of(sources, options, runs=None):
    xs = (options.x,) if options.x else ("steps", "seconds")
    if runs is None:
        runs = runs_of(sources, options.labels)
    elif options.labels is not None:
        raise InputError("--labels: not with a list of runs")
    panels = run_panels(runs, xs) if runs else []
    if runs and not panels:
        raise InputError(f"{runs[0].path}: nothing to draw (no loss curve, epoch or throughput)")
    counts = {}
    for s in sources:
        counts[s.kind] = counts.get(s.kind, 0) + 1
    for s in sources:
        suffix = f" ({s.name})" if counts[s.kind] > 1 else ""
        if s.kind in ("sweep", "sweep-summary"):
            panels.extend(sweep_panels(s, counts[s.kind] > 1))
        elif s.kind == "timeline":
            panels.append(timeline_panel(s, options.window, suffix))
        elif s.kind in CSV_PANELS:
            panels.extend(CSV_PANELS[s.kind](s, suffix))
    if options.window and "timeline" not in counts:
        raise InputError("--window: no timeline among the inputs")
    return panels


def compose(panels, title=None):
    """The panels on a grid two wide (a wide panel takes a whole row)."""
    rows, line = [], []
    for p in panels:
        if p.wide:
            if line:
                rows.append(line)
                line = []
            rows.append([p])
        else:
            line.append(p)
            if len(line) == 2:
                rows.append(line)
                line = []
    if line:
        rows.append(line)
    columns = 1 if len(panels) == 1 else 2
    width = 7.0 if columns == 1 and not panels[0].wide else 13.0
    heights = [max(p.height for p in row) for row in rows]
    fig = Figure(figsize=(width, 4.2 * sum(heights) + (0.4 if title else 0)), layout="constrained")
    grid = fig.add_gridspec(len(rows), columns, height_ratios=heights)
    for r, row in enumerate(rows):
        for c, p in enumerate(row):
            spec = grid[r, :] if p.wide else grid[r, c]
            ax = fig.add_subplot(spec, label=p.name)
            p.draw(ax, fig)
    if title:
        fig.suptitle(title)
    return fig


def build_figure(sources, options=None):
    """The Figure `ptrain plot` draws from these sources."""
    options = options or Options()
    panels = panels_of(sources, options)
    if not panels:
        raise InputError("nothing to draw")
    return compose(panels, options.title)


def axes_named(fig, name):
    """The axes of the panel of this name (e.g. 'loss:steps'), or None."""
    for ax in fig.axes:
        if ax.get_label() == name:
            return ax
    return None


# --------------------------------------------------------------------------- output


def check_output(path, suffixes, inputs):
    """Refuses, before any drawing, an output that cannot be written as asked."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in suffixes:
        raise InputError(f"{path}: the output must end in {', '.join(suffixes)} (it says which format to write)")
    if os.path.isdir(path):
        raise InputError(f"{path}: a directory; name a file")
    if os.path.lexists(path) and not os.path.isfile(path):
        raise InputError(f"{path}: not a regular file (a FIFO, socket, device or dangling link); not written")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(f"{path}: its directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{path}: its directory {directory} is not writable")
    for given in inputs:
        if os.path.exists(path) and os.path.exists(given) and os.path.samefile(path, given):
            raise InputError(f"{path}: is also an input; name another output")
    return suffix


def write_atomically(path, write):
    """write(file) into a fresh file beside PATH, then renamed over it: PATH is whole or untouched."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as e:
        raise InputError(f"{path}: cannot write ({e.strerror or e})")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except OSError as e:
        _remove(temporary)
        raise InputError(f"{path}: cannot write ({e.strerror or e})")
    except BaseException:
        _remove(temporary)
        raise


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def save_figure(fig, path, suffix):
    write_atomically(path, lambda f: fig.savefig(f, format=FIGURE_FORMATS[suffix], dpi=110))


# --------------------------------------------------------------------------- report page


def _figure_image(fig, alt):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="figure" alt="{html.escape(alt)}" src="data:image/svg+xml;base64,{data}">'


def _cell(value, digits=4):
    if value is None:
        return "&ndash;"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "&ndash;"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return html.escape(str(value))


PAGE_STYLE = """
body { font-family: sans-serif; margin: 1.5em 2em; color: #222; background: #fff; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #eef2f7; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
img.figure { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.note { color: #8a4b00; } .small { color: #666; font-size: 0.85em; }
details { margin: 0.4em 0; } summary { cursor: pointer; }
"""


def report_page(paths, title=None, labels=None):
    """The HTML page `ptrain report` writes for these reports (and metrics files)."""
    sources = [load(p) for p in paths]
    for s in sources:
        if s.kind not in ("report", "metrics"):
            raise InputError(f"{s.path}: {KIND_NAMES[s.kind]}; ptrain report takes run reports and metrics files "
                             "(ptrain plot draws the others)")
    runs = runs_of(sources, labels)
    notes = {id(r): adopt_metrics_curves(r) for r in runs}
    title = title or ("ptrain run: " + runs[0].label if len(runs) == 1 else f"ptrain: {len(runs)} runs")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title><style>{PAGE_STYLE}</style></head><body>",
           f"<h1>{html.escape(title)}</h1>",
           f'<p class="small">Written {datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")} by '
           f"ptrain report from {len(runs)} file(s).</p>"]
    out.append("<h2>Summary</h2><table><tr><th>run</th><th>file</th><th>strategy</th><th>codec</th><th>workers</th>"
               "<th>steps</th><th>samples/s</th><th>final test accuracy<br>(perplexity)</th><th>final train loss</th>"
               "<th>compression ratio</th><th>staleness mean</th><th>outcome</th></tr>")
    for run in runs:
        metric = (_cell(run.final_test_perplexity()) + " (perplexity)" if run.language_model
                  else _cell(run.final_test_accuracy))
        out.append(f"<tr><td>{_cell(run.label)}</td><td>{_cell(run.path)}</td><td>{_cell(run.strategy)}</td>"
                   f"<td>{_cell(run.codec)}</td><td class=n>{_cell(run.workers)}</td>"
                   f"<td class=n>{_cell(run.steps)}</td><td class=n>{_cell(run.samples_per_s)}</td>"
                   f"<td class=n>{metric}</td><td class=n>{_cell(run.final_train_loss)}</td>"
                   f"<td class=n>{_cell(run.compression_ratio)}</td><td class=n>{_cell(run.staleness_mean)}</td>"
                   f"<td>{_cell(run.outcome)}</td></tr>")
    out.append("</table>")
    out.append("<h2>What differs between the runs</h2>")
    if len(runs) == 1:
        out.append("<p>One run.</p>")
    else:
        diffs = plan_differences(runs)
        if not diffs:
            out.append("<p>Their plans are the same.</p>")
        else:
            out.append("<table><tr><th>plan field</th>" + "".join(f"<th>{_cell(r.label)}</th>" for r in runs)
                       + "</tr>")
            for key, values in diffs:
                out.append(f"<tr><td>{html.escape(key)}</td>"
                           + "".join(f"<td>{html.escape(show_value(v))}</td>" for v in values) + "</tr>")
            out.append("</table>")
    out.append("<h2>Training</h2>")
    for run in runs:
        if run.curves_from:
            out.append(f'<p class="note">{_cell(run.label)}: its report has no curves; they are from its metrics '
                       f"file {_cell(run.curves_from)}.</p>")
        elif notes[id(run)]:
            out.append(f'<p class="note">{_cell(run.label)}: {_cell(notes[id(run)])}.</p>')
    panels = run_panels(runs)
    if panels:
        out.append(_figure_image(compose(panels), "training curves"))
    else:
        out.append("<p>No curve, epoch or throughput to draw.</p>")
    out.append("<h2>Timelines</h2>")
    any_timeline = False
    for run in runs:
        name = ((run.plan or {}).get("run") or {}).get("timeline")
        if not name:
            continue
        any_timeline = True
        out.append(f"<h3>{_cell(run.label)}</h3>")
        found = resolve_beside(name, run.path)
        if found is None:
            out.append(f'<p class="note">Its timeline {_cell(name)} is missing (looked beside {_cell(run.path)} and '
                       "in the current directory).</p>")
            continue
        try:
            timeline = load(found)
            if timeline.kind != "timeline":
                raise InputError(f"{found}: {KIND_NAMES[timeline.kind]}, not a timeline")
            fig = compose([timeline_panel(timeline, None, "")])
            out.append(f'<p class="small">{_cell(found)}</p>' + _figure_image(fig, "timeline"))
        except InputError as e:
            out.append(f'<p class="note">Its timeline could not be drawn: {_cell(str(e))}</p>')
    if not any_timeline:
        out.append("<p>No run wrote a timeline (ptrain train --timeline FILE).</p>")
    out.append("<h2>Runs</h2>")
    for run in runs:
        out.append(f"<details><summary>{_cell(run.label)} &mdash; {_cell(run.path)}</summary>")
        if run.notes:
            out.append("<table>" + "".join(f"<tr><th>{_cell(k)}</th><td>{_cell(v)}</td></tr>"
                                           for k, v in run.notes.items()) + "</table>")
        if run.recoveries:
            out.append("<p>Recoveries:</p><pre>" + html.escape(json.dumps(run.recoveries, indent=2, default=str))
                       + "</pre>")
        plan = json.dumps(run.plan, indent=2, sort_keys=True) if run.plan is not None else "(no plan in this file)"
        out.append(f"<p>Plan:</p><pre>{html.escape(plan)}</pre></details>")
    out.append("</body></html>\n")
    return "\n".join(out)


# --------------------------------------------------------------------------- command line


class OneLineParser(argparse.ArgumentParser):
    """Usage errors in one line, exit 2."""

    def error(self, message):
        raise InputError(f"{message} (see --help)")


def _window(text):
    try:
        start, end = (float(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not START_MS:END_MS")
    if not (math.isfinite(start) and math.isfinite(end) and start < end):
        raise argparse.ArgumentTypeError(f"'{text}': START_MS must be below END_MS")
    return start, end


def _labels(text):
    return [label.strip() for label in text.split(",")]


def plot_parser():
    p = OneLineParser(
        prog="ptrain plot", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Draw ptrain's files into one figure (PNG, SVG or PDF). Each file's kind is found from its "
                    "content:\n"
                    "  run reports and metrics files: training loss and test accuracy (perplexity for a language\n"
                    "    model) against steps and seconds, runs overlaid and labelled by what differs in their\n"
                    "    plans; a staleness histogram per run that has one; samples/s per run\n"
                    "  timelines (--timeline): a Gantt chart of steps 2 to 4 of the first worker, or --window\n"
                    "  ptrain sweep CSVs: heat maps over threads x batch per strategy (median seconds to the target\n"
                    "    loss at the best lr; x: diverged or crashed runs), and the staleness mean\n"
                    "  ptrain simulate CSVs: speed-up against workers per exchange, a panel per bandwidth\n"
                    "  ptrain bench allreduce / compress CSVs: bus bandwidth against bytes; codec throughput\n"
                    "  bench/*.sh CSVs (hybrid, dgc-ablation, ps-strategies, overlap, slow-network): their figures\n"
                    "docs/plots.md says more.",
        epilog="Exit status 2: a file missing, unreadable or of no known kind, or an output that cannot be "
               "written (nothing is then written).")
    p.add_argument("files", nargs="+", metavar="FILE", help="the inputs, of any kinds above")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the figure to write: .png, .svg or .pdf (written whole or not at all)")
    p.add_argument("--title", help="a title over the figure")
    p.add_argument("--x", choices=("steps", "seconds"),
                   help="runs: draw against steps or seconds of training only (default: both, side by side)")
    p.add_argument("--window", type=_window, metavar="START_MS:END_MS",
                   help="timelines: the milliseconds since the run's start to draw (default: steps 2 to 4 of the "
                        "first worker, after the warm-up step)")
    p.add_argument("--labels", type=_labels, metavar="A,B,...",
                   help="runs: these labels, in the order of the reports and metrics files given, for the ones "
                        "made from what differs in their plans")
    return p


def report_parser():
    p = OneLineParser(
        prog="ptrain report",
        description="Write one self-contained HTML page (no network needed to open it) about these runs: a summary "
                    "table, what differs in their plans, the training curves, each run's timeline when it wrote "
                    "one (plan.run.timeline, beside the report or in the current directory), and each plan. A "
                    "report without curves takes them from its metrics file (plan.run.metrics); a metrics file "
                    "alone (a killed run) may be given too.",
        epilog="Exit status 2: a file missing, unreadable or not a run report or metrics file, or an output that "
               "cannot be written (nothing is then written).")
    p.add_argument("files", nargs="+", metavar="FILE", help="run reports (--report) or metrics files (--metrics)")
    p.add_argument("-o", "--output", required=True, metavar="PAGE", help="the page to write: .html")
    p.add_argument("--title", help="the page's title")
    p.add_argument("--labels", type=_labels, metavar="A,B,...", help="labels for the runs, in order")
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    command = "plot"
    if argv and argv[0] in ("plot", "report"):
        command = argv.pop(0)
    prog = f"ptrain {command}"
    # SIGTERM ends the program as SIGINT does: through the finally clauses that remove a temporary file.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        args = (plot_parser() if command == "plot" else report_parser()).parse_args(argv)  # --help needs no matplotlib
        if MATPLOTLIB_MISSING is not None:
            raise InputError("needs matplotlib: apt-get install python3-matplotlib")
        if command == "plot":
            suffix = check_output(args.output, tuple(FIGURE_FORMATS), args.files)
            sources = [load(p) for p in args.files]
            fig = build_figure(sources, Options(args.title, args.x, args.window, args.labels))
            save_figure(fig, args.output, suffix)
        else:
            check_output(args.output, PAGE_SUFFIXES, args.files)
            page = report_page(args.files, args.title, args.labels)
            write_atomically(args.output, lambda f: f.write(page.encode("utf-8")))
    except InputError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"{prog}: stopped by SIGINT", file=sys.stderr)
        return 130
    except Exception as e:  # a bug here, said in one line
        print(f"{prog}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
