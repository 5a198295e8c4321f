#!/usr/bin/python3
"""Fault injection: break training runs in the ways real jobs break, resume
them, and check that they end with the bits of the run that was never
interrupted.

  tools/fault_campaign.py [--build DIR] [--trials kill=50,stop=10,disk-full=10,corrupt=10]
                          [--seed S] [--every N] [--quick] [--csv FILE]

Fault kinds (each trial picks a configuration and a backend in turn):
  kill       SIGKILL at a random moment after the first checkpoint: the whole
             process on threads, a random rank under mpirun (3 ranks).
  stop       SIGSTOP. Under mpirun one random rank: the others must end within
             the communication timeout (--comm-timeout, short here) with exit
             status 75 and an error naming that rank, the last checkpoint
             intact. On threads the whole process, continued (SIGCONT) after
             longer than the timeout: the run must just go on to the same bits.
  disk-full  the checkpoint directory on a small tmpfs that fills up during a
             checkpoint (needs root): exit status 75, one error line naming
             the directory and "no space", no temporary or partial file left,
             the checkpoints before it intact; resumed after the tmpfs is made
             larger or into another directory.
  corrupt    SIGKILL after two checkpoints, then the newest checkpoint's
             manifest or one of its parts truncated or a byte flipped: the
             resume must skip it with one warning line and take the one before.
Every trial then resumes (`ptrain train --resume`) and compares the final
parameters' hash with the uninterrupted run's. The steps lost are the step the
run had reached (its --metrics file, a line a step) minus the step it resumed at.

Prints a markdown table per fault kind; exits 1 when any trial failed, 77 when
all passed but the disk-full trials were skipped (not root, or no tmpfs).
"""
import argparse
import collections
import csv
import glob
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# name: (flags, backends). Under mpirun 3 ranks: ps-sync has 2 workers and 1 server rank, a pipeline 3
# stages (of the 3-layer MLP); on threads 4 workers: the pipeline 2 x 2, two pipelines of 2 stages.
CONFIGS = {
    "hybrid, DGC, momentum": ("--strategy hybrid --compress dgc --optimizer momentum", ("threads", "mpirun")),
    "hybrid, top-k, Nesterov": ("--strategy hybrid --compress topk --optimizer nesterov", ("threads", "mpirun")),
    "hybrid, none, Adam": ("--strategy hybrid --compress none --optimizer adam", ("threads", "mpirun")),
    "sequential, none, SGD": ("--strategy sequential --compress none --optimizer sgd", ("threads",)),
    "ps-sync (1 server), none, momentum": ("--strategy ps-sync --servers 1 --compress none --optimizer momentum",
                                           ("threads", "mpirun")),
    "pipeline 2 x 2, GPipe, DGC, momentum": ("--strategy pipeline --stages 2 --schedule gpipe --microbatches 4 "
                                             "--compress dgc --optimizer momentum", ("threads",)),
    "pipeline 3 stages, 1F1B, none, Adam": ("--strategy pipeline --hidden 128,64 --microbatches 4 --optimizer adam",
                                            ("mpirun",)),
    # The cut from the layers' measured times, kept by the checkpoints: a resumed run goes on with it.
    "pipeline 3 stages, cut by time, GPipe, none, momentum": (
        "--strategy pipeline --hidden 128,64 --balance time --schedule gpipe --microbatches 2 --optimizer momentum",
        ("mpirun",)),
}
KINDS = ("kill", "stop", "disk-full", "corrupt")
RANKS = 3
STOP_TIMEOUT_S = 3  # --comm-timeout of the stop trials
PAGE = 4096
PART_NAME = re.compile(r"step-(\d{12})\.[0-9a-f]{16}\.rank-\d+\.part")
TEMPORARY_NAME = re.compile(r"\.step-\d{12}\..*\.(ckpt|part)\.[A-Za-z0-9]{6}")


class Campaign:
    def __init__(self, args):
        self.args = args
        self.ptrain = os.path.join(os.path.abspath(args.build), "ptrain")
        self.scratch = tempfile.mkdtemp(prefix="fault-campaign-")
        self.rng = random.Random(args.seed)
        self.sessions = []  # process groups started here, killed on the way out
        self.mounts = []
        self.references = {}
        self.checkpoint_bytes = {}
        samples = 8000 if args.quick else 30000
        self.common = f"--train-samples {samples} --epochs {2 if args.quick else 3} --batch 32 --seed 5"

    # --- processes -------------------------------------------------------

    def command(self, config, backend, extra, resume=False):
        """ptrain train on `backend`; resuming, the plan comes from the checkpoint."""
        flags, _ = CONFIGS[config]
        workers = 4
        if backend == "mpirun":
            workers = RANKS - (1 if "--servers" in flags else 0)
        plan = [] if resume else ["--workers", str(workers), *flags.split(), *self.common.split()]
        argv = [self.ptrain, "train", *plan, "--quiet", *extra]
        if backend == "mpirun":
            argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS), *argv]
        return argv

    def start(self, argv, log):
        out = open(log + ".out", "w")
        err = open(log + ".err", "w")
        # A session of its own: the job's processes are ended by its group id, and only those.
        process = subprocess.Popen(argv, stdout=out, stderr=err, start_new_session=True)
        self.sessions.append(process.pid)
        return process

    def run(self, argv, log, timeout=900):
        process = self.start(argv, log)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.end_session(process.pid)
            process.wait()
            return None
        self.end_session(process.pid)
        return process.returncode

    def end_session(self, pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)  # what is left of the job (a stopped rank, an orphaned one)
        except ProcessLookupError:
            pass

    def ranks(self, mpirun_pid):
        """{rank: pid} of mpirun's ranks."""
        found = {}
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                fields = open(stat).read().rsplit(")", 1)[1].split()
                if int(fields[1]) != mpirun_pid:
                    continue
                pid = int(stat.split("/")[2])
                env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            for var in env:
                if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                    found[int(var.split(b"=")[1])] = pid
        return found

    # --- what a run wrote ------------------------------------------------

    @staticmethod
    def events(path):
        lines = []
        try:
            text = open(path).read()
        except OSError:
            return lines
        for line in text.split("\n")[:-1]:  # the last is torn or empty
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
        return lines

    def last_step(self, path):
        steps = [e["step"] for e in self.events(path) if e["event"] == "step"]
        return steps[-1] if steps else 0

    @staticmethod
    def report(path):
        with open(path) as f:
            return json.load(f)

    @staticmethod
    def leftovers(directory):
        """Temporary files and parts of a checkpoint never committed."""
        names = os.listdir(directory) if os.path.isdir(directory) else []
        manifests = {n[5:17] for n in names if re.fullmatch(r"step-\d{12}\.ckpt", n)}
        left = []
        for n in names:
            m = PART_NAME.fullmatch(n)
            if TEMPORARY_NAME.fullmatch(n) or (m and m.group(1) not in manifests):
                left.append(n)
        return left

    @staticmethod
    def manifests(directory):
        return sorted(n for n in os.listdir(directory) if re.fullmatch(r"step-\d{12}\.ckpt", n))

    @staticmethod
    def follow(process, progress, step, checkpoints, timeout=600):
        """Waits until the run's progress lines tell of `step` steps and `checkpoints` committed
        checkpoints, reading only what was added; False if the run ended first."""
        seen_step, seen_checkpoints, offset, pending = 0, 0, 0, ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(progress) as f:
                    f.seek(offset)
                    text = f.read()
                    offset = f.tell()
            except OSError:
                text = ""
            *lines, pending = (pending + text).split("\n")
            for line in lines:
                event = json.loads(line)
                if event["event"] == "step":
                    seen_step = event["step"]
                elif event["event"] == "checkpoint":
                    seen_checkpoints += 1
            if seen_step >= step and seen_checkpoints >= checkpoints:
                return True
            if process.poll() is not None:
                return False
            time.sleep(0.005)
        return False

    # --- the uninterrupted runs ---------------------------------------------

    def reference(self, config, backend):
        key = (config, backend)
        if key not in self.references:
            base = os.path.join(self.scratch, f"reference-{len(self.references)}")
            status = self.run(self.command(config, backend, ["--report", base + ".json"]), base)
            if status != 0:
                sys.exit(f"fault_campaign: the reference run of {config} on {backend} failed ({status}): {base}.err")
            summary = self.report(base + ".json")["summary"]
            self.references[key] = (summary["final_params_fnv1a64"], summary["steps"],
                                    summary["train_seconds"] / max(summary["steps"], 1))
        return self.references[key]

    def checkpoint_size(self, config, backend):
        """Bytes of tmpfs a checkpoint takes (pages), from a run of two intervals."""
        key = (config, backend)
        if key not in self.checkpoint_bytes:
            base = os.path.join(self.scratch, f"size-{len(self.checkpoint_bytes)}")
            every = self.args.every
            status = self.run(self.command(config, backend, [
                "--max-steps", str(2 * every), "--checkpoint-dir", base, "--checkpoint-every", str(every),
                "--checkpoint-keep", "1"]), base)
            if status != 0:
                sys.exit(f"fault_campaign: the sizing run of {config} on {backend} failed ({status}): {base}.err")
            self.checkpoint_bytes[key] = sum(
                -(-os.path.getsize(os.path.join(base, n)) // PAGE) * PAGE for n in os.listdir(base))
        return self.checkpoint_bytes[key]

    # --- one trial ------------------------------------------------------------

    def trial(self, number, kind, config, backend):
        reference, steps, step_seconds = self.reference(config, backend)
        if kind == "disk-full":
            self.checkpoint_size(config, backend)
        base = os.path.join(self.scratch, f"trial-{number}")
        os.makedirs(base)
        t = {"trial": number, "kind": kind, "config": config, "backend": backend, "failures": [],
             "identical": False, "reached": 0, "resumed_at": 0, "lost": 0, "skipped": 0, "corrupt_used": 0,
             "end_s": "", "status": "", "detail": ""}
        fail = t["failures"].append
        ckpt = os.path.join(base, "ckpt")
        progress = os.path.join(base, "progress.jsonl")
        extra = ["--checkpoint-dir", ckpt, "--checkpoint-every", str(self.args.every), "--metrics", progress,
                 "--log-every", "1",
                 "--report", os.path.join(base, "run.json")]
        if kind == "stop":
            extra += ["--comm-timeout", str(STOP_TIMEOUT_S)]
        if kind == "disk-full":
            size = self.checkpoint_bytes[(config, backend)]
            full_after = self.rng.randint(1, 3)  # checkpoints that fit
            mount = os.path.join(base, "tmpfs")
            os.makedirs(mount)
            tmpfs_kib = (full_after * size + size // 2) // 1024
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={tmpfs_kib}k", "tmpfs", mount], check=True)
            self.mounts.append(mount)
            ckpt = os.path.join(mount, "ckpt")
            extra[1] = ckpt
            extra += ["--checkpoint-keep", "100"]  # nothing removed: the tmpfs fills
            t["detail"] = f"tmpfs {tmpfs_kib} KiB, {full_after} checkpoint(s) of {size // 1024} KiB fit"

        process = self.start(self.command(config, backend, extra), os.path.join(base, "run"))
        if kind != "disk-full":
            # A random moment after the first checkpoint (the second, to corrupt one): a
            # random step, then a random part of the next.
            need = 2 if kind == "corrupt" else 1
            target = self.rng.randint(need * self.args.every + 1, max(int(steps * 0.95), need * self.args.every + 1))
            if not self.follow(process, progress, target, need):
                fail(f"the run ended before step {target} with {need} checkpoint(s) committed")
            time.sleep(self.rng.uniform(0, step_seconds))
            t["detail"] = f"after step {target}"
        ended_before = process.poll() is not None
        faulted = time.monotonic()
        victim_rank = None
        if kind == "disk-full":
            pass  # the fault comes by itself
        elif ended_before:
            t["detail"] += "; the run had ended"
        elif backend == "mpirun":
            ranks = self.ranks(process.pid)
            if ranks:
                victim_rank = self.rng.choice(sorted(ranks))
                os.kill(ranks[victim_rank], signal.SIGSTOP if kind == "stop" else signal.SIGKILL)
                t["detail"] += f"; rank {victim_rank}"
        elif kind == "stop":
            pause = self.rng.uniform(1.2, 2.5) * STOP_TIMEOUT_S
            os.kill(process.pid, signal.SIGSTOP)
            time.sleep(pause)
            os.kill(process.pid, signal.SIGCONT)
            faulted = time.monotonic()
            t["detail"] += f"; stopped {pause:.1f} s"
        else:
            os.kill(process.pid, signal.SIGKILL)

        limit = 600 if kind in ("disk-full",) or (kind == "stop" and backend == "threads") else STOP_TIMEOUT_S + 60
        try:
            process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            fail(f"the job did not end within {limit} s of the fault")
        if kind != "disk-full":  # which comes at a moment of its own
            t["end_s"] = round(time.monotonic() - faulted, 2)
        self.end_session(process.pid)
        process.wait()
        t["status"] = process.returncode
        stderr = open(os.path.join(base, "run.err")).read()
        t["reached"] = self.last_step(progress)

        # What the fault must have done.
        if kind == "stop" and backend == "mpirun" and victim_rank is not None:
            if process.returncode != 75:
                fail(f"exit status {process.returncode}, not 75")
            if t["end_s"] != "" and t["end_s"] > STOP_TIMEOUT_S + 15:
                fail(f"ended {t['end_s']} s after the stop, past the {STOP_TIMEOUT_S} s timeout")
            # Ranks are named as ranks; a worker's rank also as that worker, a server's as its shard.
            workers = RANKS - (1 if "--servers" in CONFIGS[config][0] else 0)
            names = [rf"\branks?(\(s\))? {victim_rank}\b"]
            names.append(rf"\bworkers?(\(s\))? {victim_rank}\b" if victim_rank < workers
                         else rf"\bshards?(\(s\))? {victim_rank - workers}\b")
            named = [l for l in stderr.splitlines() if l.startswith("ptrain: error:")
                     and any(re.search(n, l) for n in names)]
            if not named:
                fail(f"no error line names rank {victim_rank}")
        if kind in ("kill", "corrupt") and backend == "mpirun" and victim_rank is not None:
            # mpirun ends the job at once and says which rank died.
            if not re.search(rf"\brank {victim_rank}\b.*signal 9", stderr):
                fail(f"mpirun's message does not name rank {victim_rank} killed by signal 9")
        if kind == "stop" and backend == "threads" and not ended_before:
            if process.returncode != 0:
                fail(f"exit status {process.returncode} after SIGCONT, not 0: {stderr.strip()[-300:]}")
        if kind == "disk-full":
            errors = [l for l in stderr.splitlines() if l.startswith("ptrain: error:")]
            if process.returncode != 75:
                fail(f"exit status {process.returncode}, not 75 (the tmpfs may not have filled)")
            if len(errors) != 1 or "no space" not in errors[0] or ckpt not in errors[0]:
                fail(f"not one error line naming {ckpt} and 'no space': {errors}")
            left = self.leftovers(ckpt)
            if left:
                fail(f"left behind in {ckpt}: {left}")
            t["detail"] += "; the run said: no space" if errors and "no space" in errors[0] else ""
        if kind == "corrupt":
            names = self.manifests(ckpt)
            if len(names) < 2:
                fail(f"{len(names)} checkpoint(s) on disk, 2 needed")
            else:
                t["corrupted"] = names[-1]
                t["detail"] += "; " + self.corrupt(ckpt, names[-1])
                t["expected_from"] = names[-2]

        # Resume, where the run did not just go on.
        if kind == "stop" and backend == "threads":
            report_path = os.path.join(base, "run.json")
            t["resumed_at"] = t["reached"]
        else:
            resume = ["--resume", ckpt, "--report", os.path.join(base, "resumed.json"), "--metrics",
                      os.path.join(base, "resumed.jsonl")]
            if kind == "disk-full":
                if self.rng.random() < 0.5:
                    subprocess.run(["mount", "-o", "remount,size=512m", mount], check=True)
                    t["detail"] += "; tmpfs made larger"
                else:
                    resume += ["--checkpoint-dir", os.path.join(base, "larger")]
                    t["detail"] += "; into another directory"
            status = self.run(self.command(config, backend, resume, resume=True), os.path.join(base, "resume"))
            resume_err = open(os.path.join(base, "resume.err")).read()
            t["skipped"] = sum(1 for l in resume_err.splitlines() if "warning: skipped" in l)
            if status != 0:
                fail(f"resume exited {status}: {resume_err.strip()[-300:]}")
                report_path = None
            else:
                report_path = os.path.join(base, "resumed.json")
        if report_path and os.path.exists(report_path):
            r = self.report(report_path)
            t["identical"] = r["summary"]["final_params_fnv1a64"] == reference
            if not (kind == "stop" and backend == "threads"):
                t["resumed_at"] = r["checkpoints"]["resumed_at_step"]
                resumed_from = os.path.basename(r["checkpoints"].get("resumed_from") or "")
                if kind == "corrupt":
                    t["corrupt_used"] = int(resumed_from == t.get("corrupted"))
                    if resumed_from != t.get("expected_from"):
                        fail(f"resumed from {resumed_from}, not the checkpoint before the damaged one "
                             f"({t.get('expected_from')})")
            if not t["identical"]:
                fail("other bits than the uninterrupted run")
        elif not t["failures"]:
            fail("no report")
        t["lost"] = max(t["reached"] - t["resumed_at"], 0)
        # A corrupted checkpoint costs one interval more.
        bound = self.args.every * (self.args.max_lost + (1 if kind == "corrupt" else 0))
        if t["lost"] > bound:
            fail(f"{t['lost']} steps lost, more than {bound}")
        expected_skips = 1 if kind == "corrupt" else 0
        if t["skipped"] != expected_skips:
            fail(f"{t['skipped']} damaged checkpoint(s) skipped on resume, {expected_skips} expected")
        if kind != "stop" or backend != "threads":
            final_dir = os.path.join(base, "larger") if "another directory" in t["detail"] else ckpt
            left = self.leftovers(final_dir)
            if left:
                fail(f"left behind in {final_dir} after the resumed run: {left}")
        if kind == "disk-full":
            subprocess.run(["umount", mount], check=False)
            self.mounts.remove(mount)
        return t

    def corrupt(self, directory, manifest):
        step = manifest[5:17]
        parts = sorted(n for n in os.listdir(directory) if n.startswith(f"step-{step}.") and n.endswith(".part"))
        target = self.rng.choice([manifest] + parts)
        path = os.path.join(directory, target)
        data = bytearray(open(path, "rb").read())
        if self.rng.random() < 0.5:
            keep = self.rng.randrange(len(data))
            open(path, "wb").write(data[:keep])
            return f"{target} truncated to {keep} of {len(data)} bytes"
        at = self.rng.randrange(len(data))
        data[at] ^= self.rng.randrange(1, 256)
        open(path, "wb").write(data)
        return f"{target}: byte {at} of {len(data)} flipped"

    def cleanup(self):
        for pgid in self.sessions:
            self.end_session(pgid)
        for mount in self.mounts:
            subprocess.run(["umount", "-l", mount], check=False)
        if not self.args.keep:
            subprocess.run(["rm", "-rf", self.scratch], check=False)


def can_mount_tmpfs(scratch):
    if os.geteuid() != 0:
        return False
    probe = os.path.join(scratch, "probe")
    os.makedirs(probe, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], capture_output=True).returncode:
        return False
    subprocess.run(["umount", probe], check=False)
    return True


def plan_trials(args, rng, with_disk_full):
    counts = dict(kind_count.split("=") for kind_count in args.trials.split(","))
    trials = []
    for kind in KINDS:
        n = int(counts.get(kind, 0))
        if kind == "disk-full" and not with_disk_full:
            continue
        # Every configuration and backend in turn; threads before mpirun in each round.
        pairs = [(c, b) for b in args.backends.split(",") for c, (_, backends) in CONFIGS.items()
                 if b in backends and (not args.configs or any(w in c for w in args.configs.split(",")))]
        if args.quick:
            pairs = pairs[:: max(1, len(pairs) // max(n, 1))]
        rng.shuffle(pairs)
        trials += [(kind, *pairs[i % len(pairs)]) for i in range(n)]
    return trials


def median(values):
    return statistics.median(values) if values else 0


def print_tables(rows, every):
    by_kind = collections.OrderedDict((k, []) for k in KINDS)
    for r in rows:
        by_kind[r["kind"]].append(r)
    titles = {
        "kill": "SIGKILL at a random moment after the first checkpoint (mpirun: a random rank)",
        "stop": f"SIGSTOP: mpirun, one rank (--comm-timeout {STOP_TIMEOUT_S}); threads, the process, continued "
                f"after 1.2 to 2.5 timeouts",
        "disk-full": "the checkpoint directory on a tmpfs that fills during a checkpoint",
        "corrupt": "SIGKILL after two checkpoints, then the newest truncated or a byte flipped",
    }
    for kind, rs in by_kind.items():
        if not rs:
            continue
        print(f"\n{titles[kind]} ({len(rs)} trials, a checkpoint every {every} steps)\n")
        print("| configuration | backend | trials | passed | same bits | steps lost: max | median "
              "| damaged checkpoints skipped | corrupt checkpoints used | exit statuses | ended after the fault (s) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        groups = collections.OrderedDict()
        for r in sorted(rs, key=lambda r: (r["backend"] != "threads", list(CONFIGS).index(r["config"]))):
            groups.setdefault((r["config"], r["backend"]), []).append(r)
        for (config, backend), g in groups.items():
            lost = [r["lost"] for r in g]
            statuses = ", ".join(f"{s} x{n}" if n > 1 else str(s)
                                 for s, n in sorted(collections.Counter(r["status"] for r in g).items(),
                                                    key=lambda x: str(x[0])))
            ends = [r["end_s"] for r in g if r["end_s"] != ""]
            backend_text = "threads (4 workers)" if backend == "threads" else f"mpirun ({RANKS} ranks)"
            print(f"| {config} | {backend_text} | {len(g)} | {sum(not r['failures'] for r in g)} "
                  f"| {sum(r['identical'] for r in g)} | {max(lost)} | {median(lost):g} "
                  f"| {sum(r['skipped'] for r in g)} | {sum(r['corrupt_used'] for r in g)} | {statuses} "
                  f"| {f'{max(ends):.1f}' if ends else ''} |")
        total_lost = [r["lost"] for r in rs]
        print(f"\nall: {sum(not r['failures'] for r in rs)} of {len(rs)} passed, "
              f"{sum(r['identical'] for r in rs)} with the same bits, steps lost max {max(total_lost)}, "
              f"median {median(total_lost):g}, more than one interval in "
              f"{sum(l > every for l in total_lost)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the build directory holding ptrain [build]")
    parser.add_argument("--trials", default="kill=50,stop=10,disk-full=10,corrupt=10",
                        help="trials per fault kind [kill=50,stop=10,disk-full=10,corrupt=10]")
    parser.add_argument("--backends", default="threads,mpirun", help="threads, mpirun or both [both]")
    parser.add_argument("--configs", default="",
                        help="only the configurations whose names contain one of these words (comma-separated)")
    parser.add_argument("--seed", type=int, default=1, help="chooses configurations, moments, victims [1]")
    parser.add_argument("--every", type=int, default=20, help="--checkpoint-every, in steps [20]")
    # Every configuration here is lockstep: its checkpoint is committed before the next step.
    parser.add_argument("--max-lost", type=float, default=1,
                        help="fail a trial that lost more than this many checkpoint intervals [1]")
    parser.add_argument("--quick", action="store_true", help="short runs (the test suite's smoke run)")
    parser.add_argument("--csv", help="write every trial to this CSV file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (logs, checkpoints)")
    args = parser.parse_args()
    if not os.access(os.path.join(args.build, "ptrain"), os.X_OK):
        sys.exit(f"fault_campaign: no ptrain in {args.build}")
    campaign = Campaign(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows = []
    try:
        with_disk_full = can_mount_tmpfs(campaign.scratch)
        trials = plan_trials(args, campaign.rng, with_disk_full)
        print(f"fault_campaign: {len(trials)} trials, scratch {campaign.scratch}", file=sys.stderr)
        for number, (kind, config, backend) in enumerate(trials, 1):
            t = campaign.trial(number, kind, config, backend)
            rows.append(t)
            verdict = "ok" if not t["failures"] else "FAILED: " + "; ".join(t["failures"])
            print(f"trial {number}: {kind}, {config}, {backend}: reached {t['reached']}, resumed at "
                  f"{t['resumed_at']}, {t['detail']}: {verdict}", file=sys.stderr, flush=True)
    finally:
        campaign.cleanup()
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["trial", "kind", "config", "backend", "status", "end_s", "reached",
                                              "resumed_at", "lost", "identical", "skipped", "corrupt_used",
                                              "detail", "failures"], extrasaction="ignore")
            w.writeheader()
            for t in rows:
                w.writerow({**t, "failures": "; ".join(t["failures"])})
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores ({model}), {campaign.common}, "
          f"--checkpoint-every {args.every}, seed {args.seed}")
    print_tables(rows, args.every)
    skipped_disk_full = "disk-full=0" not in args.trials and not with_disk_full
    if skipped_disk_full:
        print("\nthe disk-full trials were skipped: they mount a tmpfs, which needs root")
    if any(t["failures"] for t in rows):
        sys.exit(1)
    sys.exit(77 if skipped_disk_full else 0)


if __name__ == "__main__":
    main()
