"""ptrain report (python/ptrain_plot.py report): the HTML page, from hand-written reports and metrics files.

Self-contained (no network, no script), everything from the files escaped, the timeline found beside the
report or said missing, a report without curves drawing its metrics file's.
"""

import base64
import html.parser
import os
import re
import shutil
import tempfile
import unittest

from fixtures import (METRIC_EPOCHS, METRIC_STEPS, hybrid_report, metrics_lines, plan, ptrain_plot, run_program,
                      ssp_report, sweep_csv, timeline, write)

P = ptrain_plot


class Page(html.parser.HTMLParser):
    """The page's tags, images and external references."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.images, self.external, self.open = [], [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            if value and not value.startswith("data:") and not value.startswith("#"):
                self.external.append(value)
        if tag not in ("img", "meta", "br", "link"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        if self.open and self.open[-1] == tag:
            self.open.pop()


class ReportPageTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptrain-report-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def file(self, name, content):
        return write(self.dir, name, content)

    def page(self, *paths, **options):
        text = P.report_page(list(paths), **options)
        return text, Page(text)

    def test_two_reports(self):
        a = self.file("a.json", hybrid_report())
        b = self.file("b.json", ssp_report())
        text, page = self.page(a, b)
        self.assertEqual(page.external, [])
        self.assertNotIn("<script", text)
        self.assertEqual(page.open, [], "every element closed")
        self.assertEqual(len(page.images), 1)  # the curves (no timeline here)
        svg = base64.b64decode(page.images[0].split(",", 1)[1])
        self.assertTrue(svg.startswith(b"<?xml"))
        # The summary table: a row per run with its figures.
        for cell in ("<td>hybrid</td>", "<td>ssp</td>", "24,000", "11,000", "0.78", "0.71", "0.75", "completed"):
            self.assertIn(cell, text)
        # What differs, as a table; each plan, collapsible and pretty.
        self.assertIn("<td>strategy.name</td><td>hybrid</td><td>ssp</td>", text)
        self.assertIn("<td>run.straggler_rank</td><td>-1</td><td>3</td>", text)
        self.assertEqual(text.count("<details>"), 2)
        self.assertIn('&quot;staleness&quot;: 2', text)
        self.assertIn("No run wrote a timeline", text)

    def test_everything_from_the_files_is_escaped(self):
        r = hybrid_report()
        r["plan"]["data"]["dir"] = "/tmp/<script>alert(1)</script>"
        r["summary"]["notes"]["<b>note</b>"] = "<i>x</i> & y"
        r["outcome"]["status"] = "<em>done</em>"
        path = self.file("r.json", r)
        text, page = self.page(path, self.file("s.json", ssp_report()), labels=["<u>one</u>", "two"])
        self.assertNotIn("<script>", text)
        self.assertNotIn("<b>note", text)
        self.assertNotIn("<u>one", text)
        self.assertNotIn("<em>", text)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", text)
        self.assertIn("&lt;i&gt;x&lt;/i&gt; &amp; y", text)
        self.assertIn("&lt;u&gt;one&lt;/u&gt;", text)
        self.assertNotIn("script", page.tags)

    def test_timeline_beside_the_report_or_said_missing(self):
        reports = os.path.join(self.dir, "runs")
        os.mkdir(reports)
        trace, _ = timeline()
        write(reports, "t.json", trace)
        r = hybrid_report()
        r["plan"]["run"]["timeline"] = "t.json"
        with_timeline = write(reports, "a.json", r)
        r2 = ssp_report()
        r2["plan"]["run"]["timeline"] = "gone.json"
        without = write(reports, "b.json", r2)
        text, page = self.page(with_timeline, without)  # from another directory than the reports'
        self.assertEqual(len(page.images), 2)
        self.assertIn(os.path.join(reports, "t.json"), text)
        self.assertIn("Its timeline gone.json is missing", text)

    def test_a_report_without_curves_takes_its_metrics_files(self):
        r = hybrid_report()
        r["loss_curve"], r["epochs"] = [], []
        r["plan"]["run"]["metrics"] = "m.jsonl"
        path = self.file("r.json", r)
        self.file("m.jsonl", metrics_lines(plan(), METRIC_STEPS, METRIC_EPOCHS))
        run = P.runs_of([P.load(path)])[0]
        self.assertIsNone(P.adopt_metrics_curves(run))
        self.assertEqual(run.curve, [(float(s), t, loss) for s, t, loss in METRIC_STEPS])
        self.assertEqual([e["test_accuracy"] for e in run.epochs], [0.66, 0.74])
        text, page = self.page(path)
        self.assertIn("they are from its metrics file", text)
        self.assertEqual(len(page.images), 1)

    def test_a_killed_run_from_its_metrics_file(self):
        path = self.file("killed.jsonl", metrics_lines(plan(), METRIC_STEPS, METRIC_EPOCHS[:1], end=False,
                                                       truncate_last=True))
        text, page = self.page(path, self.file("a.json", hybrid_report()))
        self.assertIn("no end line (killed, or still running)", text)
        self.assertEqual(len(page.images), 1)

    def test_command_line(self):
        a = self.file("a.json", hybrid_report())
        b = self.file("b.json", ssp_report())
        out = os.path.join(self.dir, "page.html")
        status, _, stderr = run_program("report", a, b, "-o", out, "--title", "two <runs>")
        self.assertEqual((status, stderr), (0, ""))
        with open(out) as f:
            self.assertIn("<title>two &lt;runs&gt;</title>", f.read())

    def test_bad_inputs(self):
        good = self.file("a.json", hybrid_report())
        cases = [
            ([self.file("s.csv", sweep_csv())], "page.html", "ptrain report takes run reports"),
            ([good], "page.png", ".html"),
            ([os.path.join(self.dir, "none.json")], "page.html", "no such file"),
            ([self.file("bad.json", "{")], "page.html", "not valid JSON"),
        ]
        for inputs, out, words in cases:
            target = os.path.join(self.dir, out)
            status, _, stderr = run_program("report", *inputs, "-o", target)
            self.assertEqual(status, 2, stderr)
            self.assertEqual(len(stderr.splitlines()), 1, stderr)
            self.assertTrue(stderr.startswith("ptrain report: "), stderr)
            self.assertIn(words, stderr)
            self.assertFalse(os.path.exists(target))
        self.assertEqual([n for n in os.listdir(self.dir) if re.search(r"\.tmp$", n)], [])


if __name__ == "__main__":
    unittest.main()
