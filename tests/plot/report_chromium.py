#!/usr/bin/python3
"""ctest plot_report_chromium: a ptrain report page from two real reports, opened in headless Chromium.

Trains two short runs with the ptrain executable (PTRAIN_EXE, else build/ptrain), writes their page with
`ptrain report`, has Chromium (no network, as root --no-sandbox) take a screenshot of it and checks that
the screenshot is a page with the figures drawn: far from blank, many colours, and the runs' line colours
(the figures are images inside the page, so a page whose images did not load lacks them).
Exit 77 (skipped) when chromium is not installed; tools/setup-debian installs it.
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fixtures import help_text, ptrain_exe, train  # noqa: E402

SKIP = 77


def main():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("skipped: chromium is not installed (apt-get install chromium; tools/setup-debian installs it)")
        return SKIP
    exe = ptrain_exe()
    if not exe:
        print("FAIL: no ptrain executable (PTRAIN_EXE, or build/ptrain)")
        return 1
    import matplotlib.image
    import numpy as np

    work = tempfile.mkdtemp(prefix="ptrain-report-chromium-")
    try:
        extra = ["--metrics", "a.jsonl", "--timeline", "a-timeline.json"] if "--timeline" in help_text(
            exe, "train") else []
        os.chdir(work)
        a = train(exe, work, "a.json", "--workers", "2", *extra)
        b = train(exe, work, "b.json", "--workers", "2", "--strategy", "ssp", "--straggler", "1:3")
        page = os.path.join(work, "page.html")
        subprocess.run([exe, "report", a, b, "-o", page], check=True, timeout=300)
        shot = os.path.join(work, "page.png")
        profile = os.path.join(work, "profile")
        done = subprocess.run(["timeout", "120", chromium, "--headless", "--no-sandbox", "--disable-gpu",
                               "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--hide-scrollbars",
                               f"--screenshot={shot}", "--window-size=1280,2000", "file://" + page],
                              capture_output=True, text=True)
        if done.returncode != 0 or not os.path.exists(shot):
            print(f"FAIL: chromium exited {done.returncode} without a screenshot:\n{done.stderr[-2000:]}")
            return 1
        image = matplotlib.image.imread(shot)[:, :, :3]
        height, width = image.shape[:2]
        pixels = (image * 255).round().astype(np.int32).reshape(-1, 3)
        colours = len(np.unique(pixels[:, 0] * 65536 + pixels[:, 1] * 256 + pixels[:, 2]))
        ink = float((pixels.min(axis=1) < 235).mean())
        # The runs' colours in the figures (matplotlib's tab10 blue and orange), give or take anti-aliasing.
        blue = int((np.abs(pixels - [31, 119, 180]).max(axis=1) <= 12).sum())
        orange = int((np.abs(pixels - [255, 127, 14]).max(axis=1) <= 12).sum())
        print(f"screenshot {width}x{height}: {colours} colours, {ink:.1%} not white, "
              f"{blue} tab:blue and {orange} tab:orange pixels")
        problems = []
        if (width, height) != (1280, 2000):
            problems.append("not the window's size")
        if colours < 64:
            problems.append("too few colours (a blank or text-only page)")
        if ink < 0.03:
            problems.append("nearly blank")
        if blue < 200 or orange < 200:
            problems.append("the figures' line colours are missing (images not drawn?)")
        if problems:
            print("FAIL: " + "; ".join(problems) + f" (kept: {shot})")
            work = None  # keep it to look at
            return 1
        print("ok")
        return 0
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
