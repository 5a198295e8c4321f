"""ptrain plot (python/ptrain_plot.py): every kind of input drawn, and the series drawn checked against the data.

Run: /usr/bin/python3 -m unittest discover -s tests/plot  (ctest: plot). The checks read the matplotlib
Figure the program builds (lines' data, bar sizes, heat maps' arrays, labels), not pixels; each kind is
also written to PNG and SVG through the command line.
"""

import contextlib
import io
import json
import math
import os
import shutil
import tempfile
import unittest
from pathlib import Path

import numpy as np

from fixtures import (ALLREDUCE_CSV, COMPRESS_CSV, DGC_CSV, HYBRID_CSV, METRIC_EPOCHS, METRIC_STEPS, OVERLAP_CSV,
                      PS_CSV, SIMULATE_CSV, SIMULATE_NO_ONE_CSV, hybrid_report, language_model_report,
                      metrics_lines, plan, ptrain_plot, run_program, shared_memory_report, ssp_report, sweep_csv,
                      timeline, write)

P = ptrain_plot


def figure(*paths, **options):
    return P.build_figure([P.load(p) for p in paths], P.Options(**options))


def axes(fig, name):
    ax = P.axes_named(fig, name)
    if ax is None:
        raise AssertionError(f"no panel {name}; panels: {[a.get_label() for a in fig.axes]}")
    return ax


def lines(ax):
    """The labelled lines of an axes: label -> (xs, ys)."""
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()
            if not line.get_label().startswith("_")}


def bars(ax, label=None):
    """The bars of an axes (of one series when label is given): [(position, size)]; barh: (y, width)."""
    out = []
    for container in ax.containers:
        if label is not None and container.get_label() != label:
            continue
        for patch in container.patches:
            if container.orientation == "horizontal":
                out.append((patch.get_y() + patch.get_height() / 2, patch.get_width()))
            else:
                out.append((patch.get_x() + patch.get_width() / 2, patch.get_height()))
    return out


class Temporary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptrain-plot-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def file(self, name, content):
        return write(self.dir, name, content)

    def assert_writes(self, inputs, *extra, pdf=False):
        """The command line (main(), in this process) writes PNG and SVG of these inputs, and nothing else."""
        formats = [(".png", b"\x89PNG"), (".svg", b"<?xml")] + ([(".pdf", b"%PDF")] if pdf else [])
        for suffix, magic in formats:
            out = os.path.join(self.dir, "out" + suffix)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                status = P.main(["plot", *inputs, "-o", out, *extra])
            self.assertEqual(status, 0, err.getvalue())
            self.assertEqual(err.getvalue(), "")
            with open(out, "rb") as f:
                self.assertTrue(f.read(8).startswith(magic), suffix)
            leftovers = [n for n in os.listdir(self.dir) if n.endswith(".tmp")]
            self.assertEqual(leftovers, [])


class RunsTest(Temporary):
    def test_one_report_loss_and_accuracy_against_steps_and_seconds(self):
        r = hybrid_report()
        path = self.file("hybrid.json", r)
        fig = figure(path)
        label = "strategy=hybrid, codec=none"
        steps = lines(axes(fig, "loss:steps"))
        self.assertEqual(list(steps), [label])
        self.assertEqual(steps[label], ([p["step"] for p in r["loss_curve"]], [p["loss"] for p in r["loss_curve"]]))
        seconds = lines(axes(fig, "loss:seconds"))[label]
        self.assertEqual(seconds, ([p["seconds"] for p in r["loss_curve"]], [p["loss"] for p in r["loss_curve"]]))
        accuracy = lines(axes(fig, "test_accuracy:steps"))[label]
        self.assertEqual(accuracy, ([20, 40], [0.70, 0.78]))  # at each epoch's end, steps so far
        xs, ys = lines(axes(fig, "test_accuracy:seconds"))[label]
        self.assertTrue(np.allclose(xs, [0.11, 0.21]))
        self.assertEqual(bars(axes(fig, "samples_per_s")), [(0, 24000.0)])
        self.assertIsNone(P.axes_named(fig, "staleness:0"))  # hybrid has no staleness
        self.assert_writes([path], pdf=True)
        status, _, stderr = run_program(path, "-o", os.path.join(self.dir, "cli.png"))  # as a program
        self.assertEqual((status, stderr), (0, ""))

    def test_runs_overlaid_and_labelled_by_what_differs(self):
        a = self.file("a.json", hybrid_report())
        b = self.file("b.json", ssp_report())
        fig = figure(a, b)
        labels = list(lines(axes(fig, "loss:steps")))
        # The strategy kind differs (its own fields follow from it), and the straggler.
        self.assertEqual(labels, ["strategy=hybrid, straggler_factor=1, straggler_rank=-1",
                                  "strategy=ssp, straggler_factor=4, straggler_rank=3"])
        legend = axes(fig, "legend").get_legend()
        self.assertEqual([t.get_text() for t in legend.get_texts()], labels)
        # Staleness: one histogram, for the run that has one, labelled likewise.
        ax = axes(fig, "staleness:1")
        self.assertEqual([h for _, h in bars(ax)], [40, 25, 10, 5])
        self.assertIn(labels[1], ax.get_title().replace("\n", " "))
        self.assertEqual(bars(axes(fig, "samples_per_s")), [(0, 24000.0), (1, 11000.0)])
        self.assert_writes([a, b])

    def test_labels_option_and_x_option(self):
        a = self.file("a.json", hybrid_report())
        b = self.file("b.json", ssp_report())
        fig = figure(a, b, labels=["fast", "slow"], x="seconds")
        self.assertEqual(list(lines(axes(fig, "loss:seconds"))), ["fast", "slow"])
        self.assertIsNone(P.axes_named(fig, "loss:steps"))
        self.assertIsNone(P.axes_named(fig, "test_accuracy:steps"))
        self.assert_writes([a, b], "--labels", "fast,slow", "--x", "steps", "--title", "two runs")

    def test_same_plans_are_told_apart_by_file(self):
        a = self.file("a.json", hybrid_report())
        b = self.file("b.json", hybrid_report())
        self.assertEqual(list(lines(axes(figure(a, b), "loss:steps"))), ["a.json", "b.json"])

    def test_output_paths_are_no_difference(self):
        r1, r2 = hybrid_report(), hybrid_report()
        r2["plan"]["run"]["metrics"] = "m.jsonl"
        r2["plan"]["optimizer"]["lr"] = 0.01
        fig = figure(self.file("a.json", r1), self.file("b.json", r2))
        self.assertEqual(list(lines(axes(fig, "loss:steps"))), ["lr=0.001", "lr=0.01"])

    def test_language_model_draws_perplexity(self):
        path = self.file("lm.json", language_model_report())
        fig = figure(path)
        self.assertIsNone(P.axes_named(fig, "test_accuracy:steps"))
        self.assertEqual(list(lines(axes(fig, "test_perplexity:steps")).values()), [([10, 20], [90.0, 54.6])])
        self.assert_writes([path])

    def test_shared_memory_report(self):
        r = shared_memory_report()
        path = self.file("shm.json", r)
        fig = figure(path)
        self.assertEqual(list(lines(axes(fig, "loss:steps")).values()), [([0, 13, 26], [2.3, 2.2, 2.1])])
        self.assertEqual([h for _, h in bars(axes(fig, "staleness:0"))], [74, 45, 0, 0, 2, 1, 3])
        self.assertIn("shared memory", axes(fig, "staleness:0").get_title())
        self.assert_writes([path])

    def test_metrics_file(self):
        path = self.file("m.jsonl", metrics_lines(plan(), METRIC_STEPS, METRIC_EPOCHS))
        source = P.load(path)
        self.assertEqual(source.kind, "metrics")
        fig = figure(path)
        (xs, ys), = lines(axes(fig, "loss:steps")).values()
        self.assertEqual((xs, ys), ([s for s, _, _ in METRIC_STEPS], [l for _, _, l in METRIC_STEPS]))
        (xs, ys), = lines(axes(fig, "test_accuracy:steps")).values()
        self.assertEqual((xs, ys), ([20, 40], [0.66, 0.74]))
        self.assertEqual(bars(axes(fig, "samples_per_s")), [(0, 17000.0)])
        run = P.runs_of([source])[0]
        self.assertEqual(run.outcome, "completed")
        self.assert_writes([path])

    def test_killed_metrics_file_with_a_torn_last_line(self):
        path = self.file("killed.jsonl", metrics_lines(plan(), METRIC_STEPS, METRIC_EPOCHS[:1], end=False,
                                                       truncate_last=True))
        run = P.runs_of([P.load(path)])[0]
        self.assertIn("no end line", run.outcome)
        self.assertEqual([p[0] for p in run.curve], [10, 20, 30, 40])
        self.assertEqual(run.samples_per_s, 16000.0)  # the last epoch's, without an end line
        self.assert_writes([path])

    def test_shared_memory_metrics_loss_checks(self):
        path = self.file("shm.jsonl", metrics_lines(plan(), METRIC_STEPS, METRIC_EPOCHS, shared_memory=True))
        (xs, ys), = lines(axes(figure(path), "loss:seconds")).values()
        self.assertEqual((xs, ys), ([t for _, t, _ in METRIC_STEPS], [l for _, _, l in METRIC_STEPS]))

    def test_metrics_as_ptrain_writes_them_now(self):
        # run/metrics_stream.cpp: loss checks count `updates`, and the end line holds its figures inline.
        lines_ = [{"event": "start", "plan": plan(), "task": "classification", "workers": 2},
                  {"event": "loss_check", "updates": 0, "seconds": 0.0, "loss": 2.3},
                  {"event": "loss_check", "updates": 64, "seconds": 0.1, "loss": 1.4},
                  dict(METRIC_EPOCHS[0], event="epoch"),
                  {"event": "end", "outcome": "trained", "steps": 64, "samples": 2000, "train_seconds": 0.1,
                   "samples_per_s": 20000.0, "final_test_accuracy": 0.66, "final_train_loss": 1.6}]
        path = self.file("now.jsonl", "".join(json.dumps(line) + "\n" for line in lines_))
        run = P.runs_of([P.load(path)])[0]
        self.assertEqual(run.curve, [(0.0, 0.0, 2.3), (64.0, 0.1, 1.4)])
        self.assertEqual((run.outcome, run.samples_per_s, run.steps), ("trained", 20000.0, 64))

    def test_report_and_metrics_together(self):
        a = self.file("a.json", hybrid_report())
        m = self.file("m.jsonl", metrics_lines(plan(workers=2), METRIC_STEPS, METRIC_EPOCHS))
        self.assertEqual(list(lines(axes(figure(a, m), "loss:steps"))), ["workers=4", "workers=2"])


class SweepTest(Temporary):
    def test_heat_maps_of_median_time_to_target_at_the_best_lr(self):
        path = self.file("sweep.csv", sweep_csv())
        fig = figure(path)
        ax = axes(fig, "sweep:hogwild:time")
        grid = ax.images[0].get_array()
        # rows: batch 16, 32; columns: threads 1, 2
        self.assertEqual(grid[0, 0], 1.5)   # lr 0.05's median beats lr 0.01's (3.0)
        self.assertEqual(grid[0, 1], 1.0)   # the diverged run counted as never reaching the target
        self.assertEqual(grid[1, 0], 3.0)
        self.assertTrue(np.ma.is_masked(grid[1, 1]))  # every run crashed
        marks = [line for line in ax.get_lines() if line.get_label() == "diverged or crashed"]
        self.assertEqual(len(marks), 1)
        self.assertEqual(sorted(zip(marks[0].get_xdata(), marks[0].get_ydata())), [(1, 0), (1, 1)])
        texts = {t.get_text() for t in ax.texts}
        self.assertTrue({"x1", "x2", "none", "1.5 s"} <= texts, texts)
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["1", "2"])
        self.assertEqual([t.get_text() for t in ax.get_yticklabels()], ["16", "32"])
        staleness = axes(fig, "sweep:hogwild:staleness").images[0].get_array()
        self.assertEqual(staleness[0, 1], 1.0)  # the diverged run's staleness is not in the median
        leashed = axes(fig, "sweep:leashed:time").images[0].get_array()
        self.assertEqual(leashed[0, 0], 5.0)
        self.assertTrue(np.ma.is_masked(leashed[0, 1]))  # ran, never reached the target
        self.assert_writes([path])

    def test_a_sweep_with_no_target_draws_the_final_loss(self):
        rows = [("mutex", 1, 16, 0.01, 0, 0, None, 1.2, 0, 0, 0.0), ("mutex", 1, 16, 0.05, 0, 0, None, 0.7, 0, 0, 0.0)]
        path = self.file("sweep.csv", sweep_csv(rows))
        ax = axes(figure(path), "sweep:mutex:loss")
        self.assertEqual(ax.images[0].get_array()[0, 0], 0.7)
        self.assertIn("no run reached a target", ax.get_title())

    def test_a_row_cut_short_while_written_is_left_out(self):
        path = self.file("sweep.csv", sweep_csv(torn=True))
        self.assertEqual(len(P.load(path).data), len(sweep_csv().splitlines()) - 1)
        self.assert_writes([path])


class BenchTest(Temporary):
    def test_dgc_ablation(self):
        path = self.file("bench-dgc-ablation.csv", DGC_CSV)
        fig = figure(path)
        self.assertEqual([w for _, w in bars(axes(fig, "dgc:accuracy"))], [84.12, 83.9, 82.5])
        ratio = axes(fig, "dgc:ratio")
        self.assertEqual([w for _, w in bars(ratio, "whole run")], [1.0, 270.5, 268.0])
        self.assertEqual([w for _, w in bars(ratio, "after warm-up")], [1.0, 600.25, 590.0])
        self.assertEqual([t.get_text() for t in ratio.get_yticklabels()],
                         ["dense (no compression)", "DGC, all parts", "DGC, no momentum correction"])
        self.assert_writes([path])

    def test_dgc_ablation_of_a_language_model(self):
        # The LSTM's ablation: perplexity bars, none for a run that did not converge.
        path = self.file("bench-dgc-ablation.csv",
                         "configuration,test_perplexity,delta_vs_dense_percent,ratio,steady_ratio,samples_per_s,"
                         "converged\n"
                         '"dense",121.6100,0.0000,1.000,1.000,199.0,1\n'
                         '"top-k alone",nan,nan,499.739,499.739,188.0,0\n'
                         '"+ momentum correction",151.3400,24.4400,499.739,499.739,232.0,1\n')
        self.assertEqual(P.load(path).kind, "dgc-ablation-lm")
        fig = figure(path)
        widths = [w for _, w in bars(axes(fig, "dgc:perplexity"))]
        self.assertEqual(widths[0], 121.61)
        self.assertTrue(math.isnan(widths[1]))
        self.assertEqual(widths[2], 151.34)
        self.assertEqual([w for _, w in bars(axes(fig, "dgc:ratio"), "after warm-up")], [1.0, 499.739, 499.739])
        self.assert_writes([path])

    def test_simulate_speedup_per_exchange_and_bandwidth(self):
        path = self.file("sim.csv", SIMULATE_CSV)
        fig = figure(path)
        at1 = lines(axes(fig, "simulate:1"))
        xs, ys = at1["allgather"]
        self.assertEqual(xs, [1, 2, 4])
        self.assertTrue(np.allclose(ys, [1, 1828.57 / 1000, 3459.46 / 1000]))
        self.assertTrue(np.allclose(at1["ring"][1], [1, 0.27586, 0.38554]))
        self.assertEqual(set(lines(axes(fig, "simulate:10"))), {"ring", "linear"})
        no_one = lines(axes(figure(self.file("sim2.csv", SIMULATE_NO_ONE_CSV)), "simulate:1"))["ring"]
        self.assertTrue(np.allclose(no_one[1], [0.137931 * 2, 0.096386 * 4]))  # efficiency x workers
        self.assert_writes([path])

    def test_hybrid_throughput_median_per_peer(self):
        path = self.file("bench-hybrid.csv", HYBRID_CSV)
        got = lines(axes(figure(path), "hybrid:32"))
        self.assertEqual(got["ptrain-hybrid"], ([1, 2], [11000, 20000]))
        self.assertEqual(got["pytorch-ddp"], ([1, 2], [8000, 14000]))
        self.assertEqual(got["libtorch-loop"], ([1], [13000]))
        self.assert_writes([path])

    def test_allreduce_bus_bandwidth_against_bytes(self):
        path = self.file("ar.csv", ALLREDUCE_CSV)
        ax = axes(figure(path), "allreduce")
        got = lines(ax)
        self.assertEqual(got["ring"], ([4096, 16384], [0.637774, 1.224789]))
        self.assertEqual(got["hd"], ([4096, 16384], [0.352223, 1.759954]))
        self.assertEqual(got["memory copy (local)"][1], [16.016414, 16.016414])
        self.assert_writes([path])

    def test_compress_throughput_per_codec(self):
        path = self.file("compress.csv", COMPRESS_CSV)
        fig = figure(path)
        encode = axes(fig, "compress:encode")
        self.assertEqual([w for _, w in bars(encode)], [13.234249, 9.946148, 2.4915, 0.346323])
        self.assertEqual([t.get_text() for t in encode.get_yticklabels()], ["fp16", "int8", "dgc", "nth_element"])
        decode = [w for _, w in bars(axes(fig, "compress:decode"))]
        self.assertEqual(decode[:3], [3.438616, 23.826219, 1783.292517])
        self.assertTrue(math.isnan(decode[3]))  # nth_element has no decode
        self.assert_writes([path])

    def test_ps_strategies(self):
        path = self.file("bench-ps-strategies.csv", PS_CSV)
        fig = figure(path)
        self.assertEqual([w for _, w in bars(axes(fig, "ps:samples_per_s"))], [9000, 4000, 7000])
        self.assertEqual([w for _, w in bars(axes(fig, "ps:accuracy"), "after the time limit")], [79, 70, 78])
        self.assertEqual([w for _, w in bars(axes(fig, "ps:staleness"))], [0, 0, 1.2])
        self.assert_writes([path])

    def test_overlap(self):
        path = self.file("bench-overlap.csv", OVERLAP_CSV)
        ax = axes(figure(path), "overlap")
        self.assertEqual([w for _, w in bars(ax, "overlap")], [3.0])
        self.assertEqual([w for _, w in bars(ax, "no-overlap")], [5.0])

    def test_several_kinds_in_one_figure(self):
        paths = [self.file("a.json", hybrid_report()), self.file("s.csv", sweep_csv()),
                 self.file("sim.csv", SIMULATE_CSV), self.file("d.csv", DGC_CSV)]
        names = {ax.get_label() for ax in figure(*paths).axes}
        self.assertTrue({"loss:steps", "sweep:hogwild:time", "simulate:1", "dgc:ratio"} <= names, names)
        self.assert_writes(paths)


class TimelineTest(Temporary):
    def spans(self, ax, name):
        """The bars of one span name: [(row, start_ms, end_ms)]."""
        for container in ax.containers:
            if container.get_label() == name:
                return [(round(p.get_y() + p.get_height() / 2), p.get_x(), p.get_x() + p.get_width())
                        for p in container.patches]
        return []

    def test_default_window_is_steps_two_to_four_of_the_first_worker(self):
        trace, expected = timeline()
        path = self.file("t.json", trace)
        ax = axes(figure(path), "timeline")
        steps = expected[(0, "step")]
        w0, w1 = steps[1][0] / 1000, (steps[3][0] + steps[3][1]) / 1000
        self.assertEqual(ax.get_xlim(), (w0, w1))
        # Rows: worker 0 (its steps), then what is nested in them, then its comm track; worker 1 likewise.
        self.assertEqual([t.get_text() for t in ax.get_yticklabels()],
                         ["worker 0", "", "worker 0 comm", "worker 1", "", "worker 1 comm"])
        forward = [s for s in self.spans(ax, "forward") if s[0] == 1]
        want = [(1, ts / 1000, (ts + dur) / 1000) for ts, dur in expected[(0, "forward")][1:4]]
        self.assertEqual(len(forward), 3)
        for got, wanted in zip(forward, want):
            self.assertTrue(np.allclose(got[1:], wanted[1:]), (got, wanted))
        # worker 1's steps start 10 us later: its 5th step begins inside the window, cut at its edge.
        for _, a, b in self.spans(ax, "step"):
            self.assertTrue(w0 <= a <= b <= w1)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        self.assertEqual(set(legend), {"step", "forward", "backward", "wait", "optimizer", "all-reduce"})
        self.assert_writes([path])

    def test_window_option(self):
        trace, expected = timeline()
        path = self.file("t.json", trace)
        ax = axes(figure(path, window=(0.0, 0.5)), "timeline")
        self.assertEqual(ax.get_xlim(), (0.0, 0.5))
        forward = [s for s in self.spans(ax, "forward") if s[0] == 1]
        ts, dur = expected[(0, "forward")][0]
        self.assertEqual(len(forward), 1)
        self.assertTrue(np.allclose(forward[0][1:], (ts / 1000, (ts + dur) / 1000)))
        self.assertEqual(self.spans(ax, "optimizer"), [])  # after 0.5 ms
        self.assert_writes([path], "--window", "0:0.5")

    def test_ranks_are_named(self):
        trace, _ = timeline(workers=1, comm=False)
        second = json.loads(json.dumps(trace["traceEvents"]))
        for e in second:
            e["pid"] = 1
            if e["name"] == "process_name":
                e["args"]["name"] = "rank 1"
        trace["traceEvents"][0]["args"]["name"] = "rank 0"
        trace["traceEvents"] += second
        ax = axes(figure(self.file("t.json", trace)), "timeline")
        self.assertEqual([t.get_text() for t in ax.get_yticklabels()], ["rank 0: worker 0", "", "rank 1: worker 0", ""])


class BadInputTest(Temporary):
    def assert_refused(self, args, *words, out_name="out.png"):
        out = os.path.join(self.dir, out_name)
        before = os.path.lexists(out)
        status, stdout, stderr = run_program(*args, "-o", out)
        self.assertEqual(status, 2, stderr)
        self.assertEqual(stdout, "")
        self.assertEqual(len(stderr.splitlines()), 1, stderr)
        self.assertTrue(stderr.startswith("ptrain plot: "), stderr)
        self.assertNotIn("Traceback", stderr)
        for word in words:
            self.assertIn(word, stderr)
        self.assertEqual(os.path.lexists(out), before)
        self.assertEqual([n for n in os.listdir(self.dir) if n.endswith(".tmp")], [])
        return stderr

    def test_missing_file(self):
        self.assert_refused([os.path.join(self.dir, "nothing.json")], "nothing.json", "no such file")

    def test_corrupt_json(self):
        path = self.file("bad.json", '{"schema_version": 1, "plan": {')
        self.assert_refused([path], "bad.json", "not valid JSON")

    def test_json_of_no_known_kind(self):
        self.assert_refused([self.file("x.json", '{"a": 1}')], "x.json", "not a run report")

    def test_report_with_a_bad_field(self):
        r = hybrid_report()
        r["loss_curve"][1]["loss"] = "low"
        self.assert_refused([self.file("r.json", r)], "r.json", "loss_curve[1].loss")

    def test_evaluation_report(self):
        self.assert_refused([self.file("e.json", {"schema_version": 1, "command": "eval"})], "e.json", "evaluation")

    def test_unknown_csv_header(self):
        self.assert_refused([self.file("x.csv", "a,b,c\n1,2,3\n")], "x.csv", "header", "a,b,c")

    def test_csv_with_a_short_row(self):
        self.assert_refused([self.file("d.csv", DGC_CSV + "only,two\n")], "d.csv", "line 5", "2 fields")

    def test_csv_with_text_for_a_number(self):
        self.assert_refused([self.file("d.csv", DGC_CSV.replace("84.1200", "high"))], "d.csv", "test_accuracy",
                            "not a number")

    def test_csv_with_a_header_alone(self):
        self.assert_refused([self.file("d.csv", DGC_CSV.splitlines()[0] + "\n")], "d.csv", "no rows")

    def test_empty_and_binary_files(self):
        self.assert_refused([self.file("empty.json", "")], "empty.json", "empty")
        binary = os.path.join(self.dir, "b.png")
        Path(binary).write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
        self.assert_refused([binary], "b.png", "not UTF-8")

    def test_corrupt_metrics_line(self):
        text = metrics_lines(plan(), METRIC_STEPS, METRIC_EPOCHS).splitlines()
        text[2] = text[2][:-5]
        self.assert_refused([self.file("m.jsonl", "\n".join(text) + "\n")], "m.jsonl", "line 3")

    def test_timeline_without_spans(self):
        trace = {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "ptrain"}}]}
        self.assert_refused([self.file("t.json", trace)], "t.json", "without any span")

    def test_outputs_that_cannot_be_written(self):
        good = self.file("r.json", hybrid_report())
        self.assert_refused([good], "out.txt", ".png", out_name="out.txt")
        self.assert_refused([good], "does not exist", out_name="no/such/dir/out.png")
        os.mkdir(os.path.join(self.dir, "adir.png"))
        self.assert_refused([good], "a directory", out_name="adir.png")
        os.mkfifo(os.path.join(self.dir, "fifo.png"))
        self.assert_refused([good], "not a regular file", out_name="fifo.png")

    def test_output_that_is_an_input(self):
        good = self.file("r.json", hybrid_report())
        copy = os.path.join(self.dir, "r.svg")
        shutil.copy(good, copy)
        status, _, stderr = run_program(copy, "-o", copy)
        self.assertEqual(status, 2)
        self.assertIn("also an input", stderr)
        self.assertEqual(Path(copy).read_text(), Path(good).read_text())

    def test_a_failed_draw_leaves_the_old_output_whole(self):
        out = os.path.join(self.dir, "kept.png")
        Path(out).write_text("old")
        status, _, _ = run_program(os.path.join(self.dir, "missing.json"), "-o", out)
        self.assertEqual(status, 2)
        self.assertEqual(Path(out).read_text(), "old")

    def test_an_interrupted_write_leaves_nothing(self):
        out = os.path.join(self.dir, "half.png")

        def write_half(f):
            f.write(b"\x89PNG half")
            raise SystemExit(143)  # as SIGTERM ends the program, through the finally clauses

        with self.assertRaises(SystemExit):
            P.write_atomically(out, write_half)
        self.assertEqual(os.listdir(self.dir), [])

    def test_bad_options(self):
        good = self.file("r.json", hybrid_report())
        self.assert_refused([good, "--window", "5"], "--window", "START_MS:END_MS")
        self.assert_refused([good, "--window", "5:1"], "--window")
        self.assert_refused([good, "--window", "1:5"], "--window", "no timeline")
        self.assert_refused([good, "--labels", "a,b"], "--labels", "2 label(s) for 1 run")
        self.assert_refused([good, "--x", "epochs"], "--x")
        status, _, stderr = run_program(good)
        self.assertEqual(status, 2)
        self.assertIn("-o/--output", stderr)
        self.assertEqual(len(stderr.splitlines()), 1)

    def test_without_matplotlib(self):
        shim = os.path.join(self.dir, "shim", "matplotlib")
        os.makedirs(shim)
        Path(shim, "__init__.py").write_text("raise ImportError('No module named matplotlib')\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(shim))
        status, _, stderr = run_program(self.file("r.json", hybrid_report()), "-o",
                                        os.path.join(self.dir, "o.png"), env=env)
        self.assertEqual(status, 2)
        self.assertEqual(stderr, "ptrain plot: needs matplotlib: apt-get install python3-matplotlib\n")
        status, stdout, _ = run_program("--help", env=env)  # the help needs none
        self.assertEqual(status, 0)
        self.assertIn("usage: ptrain plot", stdout)

    def test_help(self):
        status, stdout, _ = run_program("--help")
        self.assertEqual(status, 0)
        self.assertIn("usage: ptrain plot", stdout)
        for word in ("--window", "--labels", "--x", "--title", "-o", ".svg", "sweep", "timeline", "simulate"):
            self.assertIn(word, stdout)
        status, stdout, _ = run_program("report", "--help")
        self.assertEqual(status, 0)
        self.assertIn("usage: ptrain report", stdout)


if __name__ == "__main__":
    unittest.main()
