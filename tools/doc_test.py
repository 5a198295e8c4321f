#!/usr/bin/python3
"""Runs the commands of README.md and docs/*.md, as written, and fails when one fails.

Every fenced block says what it is by its language:

  ```sh        commands: run in bash from the repository root, with `set -eo pipefail`;
               a non-zero exit fails the block (and the test)
  ```console   `$ command` lines, each followed by the output it prints (stdout and
               stderr together): each command runs and its output must be the lines
               shown; a line `...` stands for any number of lines; the exit status
               must be 0 unless the block says `status N`
  anything else (text, json, python, cpp, cmake, ...) is not run

A fence without a language is an error (say `text` for output). An HTML comment
just before a block (blank lines aside) says how to run it:

  <!-- doc-test: skip: REASON -->     not run here; REASON is printed and counted
  <!-- doc-test: env K=V K2="a b" --> environment for the block (the scripts read these
                                       to run shorter than the figures they document)
  <!-- doc-test: timeout SECONDS -->   the block's limit (default 300)
  <!-- doc-test: status N -->          console blocks: each command exits N
  <!-- doc-test: needs root -->        run as root only (skipped, and said so, otherwise)
  <!-- doc-test: file PATH -->         a non-command block: its text is written to PATH
                                       (relative to the repository root) for later blocks

Blocks run in document order: README.md, then docs/*.md by name. What they write
goes to untracked paths listed in .gitignore's doc-test section; a full run
removes those first, so that every run starts from the same state.

README.md states the counts ("N blocks run, M skipped"); a full run checks them
first, so the statement cannot go stale.

  /usr/bin/python3 tools/doc_test.py                    # every file
  /usr/bin/python3 tools/doc_test.py docs/models.md     # one file
  /usr/bin/python3 tools/doc_test.py README.md:40-90    # the blocks that open on lines 40 to 90
  /usr/bin/python3 tools/doc_test.py --list             # the blocks and what would happen, running nothing
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNABLE = {"sh", "console"}
DEFAULT_TIMEOUT = 300
TAIL_LINES = 40
COUNTS_RE = re.compile(r"(\d+) blocks run, (\d+) skipped")
GITIGNORE_SECTION = "# Written by the command blocks of README.md and docs/"


class DocError(Exception):
    pass


@dataclass
class Block:
    path: str  # relative to ROOT
    line: int  # the opening fence's line, 1-based
    lang: str
    text: str
    skip: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    status: int = 0
    needs_root: bool = False
    file: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
ANNOTATION_RE = re.compile(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$")


def parse(path: Path) -> list[Block]:
    rel = str(path.relative_to(ROOT))
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    pending: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        annotation = ANNOTATION_RE.match(line)
        fence = FENCE_RE.match(line)
        if annotation:
            pending.append((i + 1, annotation.group(1)))
        elif fence:
            indent, marker, info = fence.group(1), fence.group(2), fence.group(3).strip()
            lang = info.split()[0] if info else ""
            body: list[str] = []
            j = i + 1
            while j < len(lines):
                close = FENCE_RE.match(lines[j])
                if close and close.group(2)[0] == marker[0] and len(close.group(2)) >= len(marker) \
                        and not close.group(3).strip():
                    break
                text = lines[j]
                body.append(text[len(indent):] if text.startswith(indent) else text.lstrip())
                j += 1
            else:
                raise DocError(f"{rel}:{i + 1}: this fence is never closed")
            if not lang:
                raise DocError(f"{rel}:{i + 1}: a fence without a language: say sh (commands to run), "
                               f"console (commands with their output), text (output), or the code's language")
            if lang in ("bash", "shell", "shell-session"):
                raise DocError(f"{rel}:{i + 1}: ```{lang}: write commands as ```sh (or ```console with their output)")
            block = Block(rel, i + 1, lang, "\n".join(body) + "\n")
            for where, spec in pending:
                apply_annotation(block, spec, f"{rel}:{where}")
            if block.file is None and lang not in RUNNABLE and pending and block.skip is None:
                raise DocError(f"{rel}:{pending[0][0]}: a doc-test note before a ```{lang} block, which is not run")
            pending = []
            blocks.append(block)
            i = j
        elif line.strip() and pending:
            raise DocError(f"{rel}:{pending[0][0]}: a doc-test note that no fenced block follows")
        i += 1
    if pending:
        raise DocError(f"{rel}:{pending[0][0]}: a doc-test note at the end of the file")
    return blocks


def apply_annotation(block: Block, spec: str, where: str) -> None:
    word, _, rest = spec.partition(" ")
    if spec.startswith("skip:"):
        block.skip = spec[len("skip:"):].strip() or None
        if block.skip is None:
            raise DocError(f"{where}: skip needs a reason: <!-- doc-test: skip: REASON -->")
    elif word == "env":
        for item in shlex.split(rest):
            key, eq, value = item.partition("=")
            if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise DocError(f"{where}: env wants NAME=VALUE, got {item!r}")
            block.env[key] = value
    elif word == "timeout":
        try:
            block.timeout = float(rest)
        except ValueError:
            raise DocError(f"{where}: timeout wants seconds, got {rest!r}") from None
    elif word == "status":
        try:
            block.status = int(rest)
        except ValueError:
            raise DocError(f"{where}: status wants a number, got {rest!r}") from None
    elif spec == "needs root":
        block.needs_root = True
    elif word == "file":
        if not rest or rest.startswith("/") or ".." in Path(rest).parts:
            raise DocError(f"{where}: file wants a path inside the repository, got {rest!r}")
        block.file = rest
    else:
        raise DocError(f"{where}: unknown doc-test note {spec!r} "
                       f"(skip: REASON, env K=V, timeout S, status N, needs root, file PATH)")


def documents() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def select(spec: str) -> tuple[Path, int, int]:
    m = re.fullmatch(r"(.+?)(?::(\d+)(?:-(\d+))?)?", spec)
    path = (ROOT / m.group(1)).resolve() if not os.path.isabs(m.group(1)) else Path(m.group(1))
    if not path.is_file():
        path = (Path.cwd() / m.group(1)).resolve()
    if not path.is_file():
        raise DocError(f"{spec}: no such file")
    start = int(m.group(2)) if m.group(2) else 1
    end = int(m.group(3)) if m.group(3) else (start if m.group(2) else 10**9)
    return path, start, end


def outputs_to_clean() -> list[str]:
    """The names in .gitignore's doc-test section (files and folders at the root; * allowed)."""
    names, inside = [], False
    for line in (ROOT / ".gitignore").read_text().splitlines():
        if line.startswith(GITIGNORE_SECTION):
            inside = True
        elif inside and not line.strip():
            break
        elif inside and not line.startswith("#"):
            name = line.strip().strip("/")
            if name and "/" not in name and not any(c in name for c in "?[!") and name not in (".", ".."):
                names.append(name)
    return names


def clean() -> None:
    for pattern in outputs_to_clean():
        for target in ROOT.glob(pattern):
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)


def tail(text: str, n: int = TAIL_LINES) -> str:
    lines = text.rstrip("\n").split("\n")
    cut = lines[-n:]
    head = f"    ... ({len(lines) - n} lines before)\n" if len(lines) > n else ""
    return head + "\n".join("    " + l for l in cut)


RUNNING: list[subprocess.Popen] = []


def stop(signum, _frame) -> None:
    """Stopped (^C, SIGTERM): end the block's whole process group too, not only this process."""
    for proc in RUNNING:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def run_script(script: str, block: Block) -> tuple[int | None, str]:
    env = dict(os.environ)
    env.update(block.env)
    with tempfile.NamedTemporaryFile("w", suffix=".sh", prefix="doc-test-", delete=False) as f:
        f.write("set -eo pipefail\n" + script)
        name = f.name
    try:
        proc = subprocess.Popen(["bash", name], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                errors="replace", start_new_session=True)
        RUNNING.append(proc)
        try:
            out, _ = proc.communicate(timeout=block.timeout)
            return proc.returncode, out
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return None, out
        finally:
            RUNNING.remove(proc)
    finally:
        os.unlink(name)


def console_commands(block: Block) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = []
    for line in block.text.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands and commands[-1][0].endswith("\\") and not commands[-1][1]:
            commands[-1] = (commands[-1][0] + "\n" + line, [])
        elif commands:
            commands[-1][1].append(line.rstrip())
        elif line.strip():
            raise DocError(f"{block.where}: a console block starts with a `$ ` command line")
    return commands


def matches(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and matches(expected[1:], actual[1:])


def run_block(block: Block) -> str | None:
    """Runs one block; returns None when it passed, else what went wrong."""
    if block.lang == "sh":
        code, out = run_script(block.text, block)
        if code is None:
            return f"timed out after {block.timeout:g} s\n--- output (tail):\n{tail(out)}"
        if code != 0:
            return f"exit status {code}\n--- output (tail):\n{tail(out)}"
        return None
    for command, expected in console_commands(block):
        code, out = run_script(command + "\n", block)
        actual = [l.rstrip() for l in out.rstrip("\n").split("\n")] if out.strip() else []
        if code is None:
            return f"$ {command}\ntimed out after {block.timeout:g} s\n--- output (tail):\n{tail(out)}"
        if code != block.status:
            return f"$ {command}\nexit status {code}, expected {block.status}\n--- output (tail):\n{tail(out)}"
        if not matches([l.rstrip() for l in expected], actual):
            shown = "\n".join("    " + l for l in expected)
            return f"$ {command}\nthe output differs from the document's\n--- expected:\n{shown}\n" \
                   f"--- printed:\n{tail(out)}"
    return None


def check_counts(blocks: list[Block]) -> str | None:
    runnable = [b for b in blocks if b.lang in RUNNABLE]
    ran = sum(1 for b in runnable if b.skip is None)
    skipped = sum(1 for b in runnable if b.skip is not None)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = COUNTS_RE.search(readme)
    if not stated:
        return f"README.md does not state the counts: add \"{ran} blocks run, {skipped} skipped\""
    if (int(stated.group(1)), int(stated.group(2))) != (ran, skipped):
        return (f"README.md says \"{stated.group(0)}\", but there are {ran} blocks to run and "
                f"{skipped} skipped: update that line")
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.split("\n")[1:]))
    parser.add_argument("select", nargs="*", metavar="FILE[:LINE[-LINE]]",
                        help="only these files, or the blocks opening in these lines")
    parser.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    parser.add_argument("--keep-going", action="store_true", help="run every block even after a failure")
    parser.add_argument("--clean", action="store_true",
                        help="remove the doc-test outputs first (a full run always does)")
    args = parser.parse_args()

    try:
        if args.select:
            chosen = []
            for spec in args.select:
                path, start, end = select(spec)
                chosen += [b for b in parse(path) if start <= b.line <= end]
            if not chosen:
                raise DocError(f"no block opens where {' '.join(args.select)} says")
        else:
            everything = [b for path in documents() for b in parse(path)]
            chosen = everything
    except DocError as e:
        print(f"doc_test: {e}", file=sys.stderr)
        return 2

    is_root = os.geteuid() == 0
    if args.list:
        for b in chosen:
            if b.lang not in RUNNABLE:
                what = f"writes {b.file}" if b.file else "not run"
            elif b.skip:
                what = f"skipped: {b.skip}"
            elif b.needs_root and not is_root:
                what = "skipped here: needs root"
            else:
                what = "runs" + (f" with {' '.join(f'{k}={v}' for k, v in b.env.items())}" if b.env else "")
            print(f"{b.where}: ```{b.lang}: {what}")
        return 0

    if not args.select:
        problem = check_counts(everything)
        if problem:
            print(f"doc_test: {problem}", file=sys.stderr)
            return 1
    if not args.select or args.clean:
        clean()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    started = time.monotonic()
    ran, failed = 0, []
    skipped: dict[str, int] = {}
    for b in chosen:
        if b.file and b.skip is None:
            target = ROOT / b.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.text)
            continue
        if b.lang not in RUNNABLE:
            continue
        reason = b.skip or ("needs root" if b.needs_root and not is_root else None)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
            print(f"{b.where}: skipped: {reason}", flush=True)
            continue
        t0 = time.monotonic()
        problem = run_block(b)
        ran += 1
        seconds = time.monotonic() - t0
        if problem is None:
            print(f"{b.where}: ok ({seconds:.1f} s)", flush=True)
            continue
        failed.append(b)
        body = "\n".join("    " + l for l in b.text.rstrip("\n").split("\n"))
        env = f" with {' '.join(f'{k}={v}' for k, v in b.env.items())}" if b.env else ""
        print(f"{b.where}: FAILED ({seconds:.1f} s): the ```{b.lang} block{env}\n{body}\n{problem}\n"
              f"    (again: /usr/bin/python3 tools/doc_test.py {b.where})", flush=True)
        if not args.keep_going:
            break

    total = time.monotonic() - started
    print(f"doc_test: {ran} blocks ran, {sum(skipped.values())} skipped, {len(failed)} failed, in {total:.0f} s")
    for reason, n in skipped.items():
        print(f"  skipped {n}: {reason}")
    for b in failed:
        print(f"  failed: {b.where}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
