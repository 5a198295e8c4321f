"""ptrain plot and ptrain report through the ptrain executable (PTRAIN_EXE), on files real runs wrote.

The C++ commands find ptrain_plot.py beside the executable (the build tree) or in LIBEXECDIR/ptrain of
an installed prefix, run it with /usr/bin/python3 (PTRAIN_PYTHON) and pass its exit status back. The
series drawn from real reports, metrics files, timelines, sweep and simulate CSVs are checked against
what those files hold. Skipped when there is no ptrain executable.
"""

import csv
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy as np

from fixtures import help_text, ptrain_exe, ptrain_plot, train

P = ptrain_plot
EXE = ptrain_exe()


def lines(ax):
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()
            if not line.get_label().startswith("_")}


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def read_json(path):
    with open(path) as f:
        return json.load(f)


def run(*args, env=None):
    done = subprocess.run([*args], capture_output=True, text=True, timeout=300, env=env)
    return done.returncode, done.stdout, done.stderr


def check(*args):
    """Runs a command that must succeed; its error output in the failure when it does not."""
    status, stdout, stderr = run(*args)
    if status != 0:
        raise AssertionError(f"{' '.join(args)}: exit {status}: {stderr.strip()[-2000:]}")
    return stdout


@unittest.skipUnless(EXE, "no ptrain executable (PTRAIN_EXE, or build/ptrain)")
class RealRunsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ptrain-plot-real-")
        cls.recording = "--metrics" in help_text(EXE, "train")
        extra = ["--metrics", "hybrid.jsonl", "--timeline", "hybrid-timeline.json"] if cls.recording else []
        cwd = os.getcwd()
        os.chdir(cls.dir)  # the report names its metrics and timeline files relative to here
        try:
            cls.hybrid = train(EXE, cls.dir, "hybrid.json", "--workers", "2", *extra)
            cls.ssp = train(EXE, cls.dir, "ssp.json", "--workers", "2", "--strategy", "ssp", "--straggler", "1:3")
            cls.hogwild = train(EXE, cls.dir, "hogwild.json", "shm", "--strategy", "hogwild", "--threads", "2")
        finally:
            os.chdir(cwd)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_reports_of_three_strategies(self):
        reports = [read_json(p) for p in (self.hybrid, self.ssp, self.hogwild)]
        fig = P.build_figure([P.load(p) for p in (self.hybrid, self.ssp, self.hogwild)])
        drawn = list(lines(P.axes_named(fig, "loss:steps")).values())
        self.assertEqual(len(drawn), 3)
        for (xs, ys), r in zip(drawn, reports):
            self.assertEqual(xs, [p["step"] for p in r["loss_curve"]])
            self.assertEqual(ys, [p["loss"] for p in r["loss_curve"]])
        labels = list(lines(P.axes_named(fig, "test_accuracy:seconds")))
        self.assertTrue(labels[0].startswith("strategy=hybrid") and labels[1].startswith("strategy=ssp"), labels)
        self.assertIn("straggler_rank=1", labels[1])
        for i, r in ((1, reports[1]["parameter_server"]), (2, reports[2]["shared_memory"])):
            heights = [p.get_height() for p in P.axes_named(fig, f"staleness:{i}").patches]
            self.assertEqual(heights, r["staleness_histogram"])
        widths = [p.get_width() for p in P.axes_named(fig, "samples_per_s").patches]
        self.assertEqual(widths, [r["summary"]["samples_per_s"] for r in reports])

    def test_ptrain_plot_writes_png_and_svg(self):
        for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml")):
            out = os.path.join(self.dir, "runs" + suffix)
            status, stdout, stderr = run(EXE, "plot", self.hybrid, self.ssp, "-o", out, "--title", "real runs")
            self.assertEqual((status, stderr), (0, ""))
            self.assertTrue(Path(out).read_bytes().startswith(magic))

    def test_ptrain_report_page(self):
        out = os.path.join(self.dir, "page.html")
        status, _, stderr = run(EXE, "report", self.hybrid, self.ssp, "-o", out)
        self.assertEqual((status, stderr), (0, ""))
        text = Path(out).read_text()
        self.assertIn("<td>ssp</td>", text)
        if self.recording:  # the hybrid run's timeline, found beside its report
            self.assertEqual(text.count("<img"), 2)
            self.assertIn("hybrid-timeline.json", text)

    def test_metrics_file_and_timeline(self):
        if not self.recording:
            self.skipTest("this ptrain train has no --metrics / --timeline yet")
        report = read_json(self.hybrid)
        metrics = os.path.join(self.dir, "hybrid.jsonl")
        fig = P.build_figure([P.load(metrics)])
        (xs, ys), = lines(P.axes_named(fig, "loss:steps")).values()
        # Every log_every steps (the report may add the last step's); the loss is worker 0's batch loss
        # where the report has the workers' mean.
        self.assertEqual(xs, [p["step"] for p in report["loss_curve"] if p["step"] % 10 == 0])
        self.assertEqual(len(ys), len(xs))
        (xs, ys), = lines(P.axes_named(fig, "test_accuracy:steps")).values()
        self.assertEqual(ys, [e["test_accuracy"] for e in report["epochs"]])
        trace = os.path.join(self.dir, "hybrid-timeline.json")
        source = P.load(trace)
        self.assertEqual(source.kind, "timeline")
        ax = P.axes_named(P.build_figure([source]), "timeline")
        steps = sorted((e["ts"], e["dur"]) for e in read_json(trace)["traceEvents"]
                       if e.get("ph") == "X" and e["name"] == "step" and e["tid"] == 1 and e["pid"] == 0)
        self.assertTrue(np.allclose(ax.get_xlim(), (steps[1][0] / 1000, sum(steps[3]) / 1000)))
        names = {c.get_label() for c in ax.containers}
        self.assertTrue({"step", "forward", "backward"} <= names, names)

    def test_sweep_csv(self):
        path = os.path.join(self.dir, "sweep.csv")
        summary = os.path.join(self.dir, "sweep-summary.csv")
        check(EXE, "sweep", "--strategies", "hogwild", "--threads", "1,2", "--batch", "16,32", "--lr", "0.05",
              "--repetitions", "1", "--epochs", "0.2", "--train-samples", "1000", "--hidden", "32", "--target-loss",
              "1.6", "--csv", path, "--summary-csv", summary)
        rows = list(read_csv(path))
        fig = P.build_figure([P.load(path)])
        timed = any(r["seconds_to_target"] for r in rows)
        ax = P.axes_named(fig, "sweep:hogwild:time" if timed else "sweep:hogwild:loss")
        grid = ax.images[0].get_array()
        for r in rows:
            value = r["seconds_to_target" if timed else "final_train_loss"]
            cell = grid[[16, 32].index(int(r["batch"])), [1, 2].index(int(r["threads"]))]
            if value and r["diverged"] == "0":
                self.assertAlmostEqual(float(cell), float(value), places=6)
            else:
                self.assertTrue(np.ma.is_masked(cell))
        if timed:  # its summary CSV draws the same map
            again = P.axes_named(P.build_figure([P.load(summary)]), "sweep:hogwild:time").images[0].get_array()
            self.assertTrue(np.ma.allclose(again, grid, atol=1e-4))
            self.assertTrue((np.ma.getmaskarray(again) == np.ma.getmaskarray(grid)).all())

    def test_simulate_and_bench_csvs(self):
        sim = os.path.join(self.dir, "sim.csv")
        check(EXE, "simulate", "--workers", "1,2,4,8", "--bandwidth", "1,10", "--csv", sim)
        compress = os.path.join(self.dir, "compress.csv")
        check(EXE, "bench", "compress", "--sizes", "64K", "--codecs", "fp16,int8", "--iters", "2", "--warmup", "1",
              "--csv", compress)
        allreduce = os.path.join(self.dir, "allreduce.csv")
        check(EXE, "bench", "allreduce", "--ranks", "2", "--sizes", "4KiB:16KiB", "--iters", "2", "--warmup", "1",
              "--csv", allreduce)
        fig = P.build_figure([P.load(p) for p in (sim, compress, allreduce)])
        rows = [r for r in read_csv(sim) if r["bandwidth_gbit"] == "10" and r["exchange"] == "ring"]
        xs, ys = lines(P.axes_named(fig, "simulate:10"))["ring"]
        self.assertEqual(xs, [1, 2, 4, 8])
        self.assertTrue(np.allclose(ys, [float(r["samples_per_s"]) / float(rows[0]["samples_per_s"]) for r in rows]))
        encode = [p.get_width() for p in P.axes_named(fig, "compress:encode").patches]
        self.assertEqual(encode, [float(r["encode_gbps"]) for r in read_csv(compress)])
        ring = [r for r in read_csv(allreduce) if r["algorithm"] == "ring"]
        self.assertEqual(lines(P.axes_named(fig, "allreduce"))["ring"][1], [float(r["busbw_gbps"]) for r in ring])
        out = os.path.join(self.dir, "benches.svg")
        self.assertEqual(run(EXE, "plot", sim, compress, allreduce, "-o", out)[0], 0)


@unittest.skipUnless(EXE, "no ptrain executable (PTRAIN_EXE, or build/ptrain)")
class CommandTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptrain-plot-command-")
        self.report = os.path.join(self.dir, "r.json")
        from fixtures import hybrid_report
        Path(self.report).write_text(json.dumps(hybrid_report()))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_help_is_the_programs(self):
        status, stdout, _ = run(EXE, "plot", "--help")
        self.assertEqual(status, 0)
        self.assertIn("usage: ptrain plot", stdout)
        self.assertIn("--window START_MS:END_MS", stdout)
        status, stdout, _ = run(EXE, "report", "-h")
        self.assertEqual(status, 0)
        self.assertIn("usage: ptrain report", stdout)
        status, stdout, _ = run(EXE, "--help")
        self.assertIn("plot", stdout)
        self.assertIn("report", stdout)

    def test_exit_status_and_error_passed_back(self):
        out = os.path.join(self.dir, "x.png")
        status, stdout, stderr = run(EXE, "plot", os.path.join(self.dir, "none.json"), "-o", out)
        self.assertEqual(status, 2)
        self.assertEqual(stderr.splitlines(), [f"ptrain plot: {os.path.join(self.dir, 'none.json')}: no such file"])
        self.assertFalse(os.path.exists(out))
        self.assertEqual(run(EXE, "plot", self.report, "-o", out)[0], 0)
        self.assertTrue(os.path.getsize(out) > 0)

    def test_python_override(self):
        out = os.path.join(self.dir, "x.png")
        env = dict(os.environ, PTRAIN_PYTHON=os.path.join(self.dir, "no-python"))
        status, _, stderr = run(EXE, "plot", self.report, "-o", out, env=env)
        self.assertEqual(status, 2)
        self.assertEqual(len(stderr.splitlines()), 1, stderr)
        self.assertIn("cannot run", stderr)
        self.assertIn("PTRAIN_PYTHON", stderr)
        # A Python that says who ran it: the program and the arguments, untouched.
        fake = os.path.join(self.dir, "fake-python")
        Path(fake).write_text('#!/bin/sh\nprintf "%s|" "$@"\nexit 7\n')
        os.chmod(fake, 0o755)
        status, stdout, _ = run(EXE, "report", "a b.json", "-o", "p.html", "--title=x",
                                env=dict(os.environ, PTRAIN_PYTHON=fake))
        self.assertEqual(status, 7)
        program, *args = stdout.rstrip("|").split("|")
        self.assertTrue(program.endswith("ptrain_plot.py"), program)
        self.assertEqual(args, ["report", "a b.json", "-o", "p.html", "--title=x"])

    def test_installed_layout(self):
        libexec = os.environ.get("PTRAIN_LIBEXECDIR", "libexec")
        prefix = os.path.join(self.dir, "prefix")
        os.makedirs(os.path.join(prefix, "bin"))
        exe = os.path.join(prefix, "bin", "ptrain")
        shutil.copy(EXE, exe)
        out = os.path.join(self.dir, "x.svg")
        status, _, stderr = run(exe, "plot", self.report, "-o", out)
        self.assertEqual(status, 2)
        self.assertIn("ptrain_plot.py, which is neither beside", stderr)
        os.makedirs(os.path.join(prefix, libexec, "ptrain"))
        shutil.copy(P.__file__, os.path.join(prefix, libexec, "ptrain", "ptrain_plot.py"))
        status, _, stderr = run(exe, "plot", self.report, "-o", out)
        self.assertEqual((status, stderr), (0, ""))
        self.assertTrue(Path(out).read_bytes().startswith(b"<?xml"))


if __name__ == "__main__":
    unittest.main()
