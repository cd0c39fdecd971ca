"""Run a problem's checks against one file in a worker process, with a time limit per check.

A check that runs past its limit is reported as a time-out, with where the learner's code was when it was stopped
(the worker's stack, dumped by faulthandler on SIGUSR1 just before the kill); the grade stops there: the remaining
checks would call the same code, so they are listed as not run instead of each waiting out its own limit. A worker
that dies is reported as a crash, and a fresh worker takes over the remaining checks.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from course.grader.info import CheckInfo, Hint
from course.problems import ROOT

TOTAL_BUDGET_S = 240.0      # the whole run ends within a few minutes, whatever the file does
DUMP_WAIT_S = 2.0           # how long a stopped check's worker may take to write its stack
IMPORT_LIMIT_S = 15.0       # importing the learner's file (at least this, whatever the per-check limit;
#                             COURSE_IMPORT_LIMIT_S lowers it, as the self-tests do for a file that hangs at import)


@dataclass
class Result:
    id: str
    status: str                      # pass fail error todo missing timeout crash skip not_run import_error
    lines: list = field(default_factory=list)
    where: str | None = None
    hint: list | None = None
    output_lines: int = 0
    output_text: str = ""
    traceback: str = ""
    seconds: float = 0.0
    info: CheckInfo | None = None    # the check's title and hint, from the worker's catalogue

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass
class Run:
    problem: str
    impl: str
    device: str
    results: list
    import_error: Result | None = None
    catalogue: dict = field(default_factory=dict)    # check id -> CheckInfo
    cuda: bool = False                               # whether the worker's torch sees a GPU
    timed_out: str | None = None                     # the check that timed out (the grade stopped there)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)


def _result(event: dict, seconds: float) -> Result:
    return Result(id=event["id"], status=event["status"], lines=event.get("lines", []), where=event.get("where"),
                  hint=event.get("hint"), output_lines=event.get("out_lines", 0),
                  output_text=event.get("out_text", ""), traceback=event.get("traceback", ""), seconds=seconds)


class _Worker:
    def __init__(self, problem, impl, device, lang, ids):
        self.stderr = tempfile.TemporaryFile()
        fd, self.dump = tempfile.mkstemp(prefix="course-stack-", suffix=".txt")
        os.close(fd)
        cmd = [sys.executable, "-m", "course.grader.worker", "--problem", problem, "--impl", str(impl),
               "--device", device, "--lang", lang, "--checks", ",".join(ids), "--dump", self.dump]
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env, start_new_session=True)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def next_event(self, timeout: float):
        """The next JSON event, None on time-out, or {'event': 'eof'} when the worker is gone."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return {"event": "eof"}
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def stack(self) -> str:
        """The worker's Python stacks, as faulthandler writes them on SIGUSR1 ('' when none comes in time)."""
        try:
            os.kill(self.proc.pid, signal.SIGUSR1)
        except OSError:
            return ""
        deadline, size, text = time.monotonic() + DUMP_WAIT_S, -1, ""
        while time.monotonic() < deadline:
            time.sleep(0.05)
            with contextlib.suppress(OSError):
                with open(self.dump, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            if text and len(text) == size:                     # written, and no longer growing
                break
            size = len(text)
        return text

    def kill(self) -> str:
        with contextlib.suppress(OSError):                                  # already gone
            os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait()
        self.stderr.seek(0)
        tail = self.stderr.read()[-2000:].decode("utf-8", "replace")
        self.proc.stdout.close()
        self.selector.close()
        self.stderr.close()
        with contextlib.suppress(OSError):
            os.unlink(self.dump)
        return f"exit code {code}" + (f": {tail.strip().splitlines()[-1]}" if tail.strip() else "")


_FRAME = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+) in (?P<name>\S+)')


def learner_frames(dump: str, impl) -> list:
    """[(line, function)] of the frames in file `impl` in a faulthandler dump, innermost first: those of the first
    thread that is inside `impl` (the one running the check, unless the learner's code started threads of its
    own)."""
    impl = os.path.realpath(impl)
    for block in re.split(r"\n(?=\S)", dump):                 # one block per thread: a header, then its frames
        frames = [(int(m["line"]), m["name"]) for m in map(_FRAME.match, block.splitlines())
                  if m and os.path.realpath(m["file"]) == impl]
        if frames:
            return frames
    return []


def hang_site(dump: str, impl, lang: str):
    """(lines, where) saying where the learner's code was when a check was stopped: the line it was running and
    the function, and the outermost function of its file that the check had called, when that is another."""
    import linecache

    from course.lang import pick
    from course.problems import relpath

    frames = learner_frames(dump, impl)
    if not frames:
        return [], None
    (line, name), (_, outer) = frames[0], frames[-1]
    code = linecache.getline(str(impl), line).strip()
    if name == "<module>":
        text = pick(lang, "被停下时它正在模块顶层", "when stopped it was at module level")
    else:
        text = pick(lang, f"被停下时它正在 {name}() 里" + (f"（由 {outer}() 调用）" if outer != name else ""),
                    f"when stopped it was in {name}()" + (f" (called from {outer}())" if outer != name else ""))
    return [text + (pick(lang, f"：{code}", f": {code}") if code else "")], f"{relpath(impl)}:{line}"


def grade(problem, impl, device: str, lang: str, ids: list, timeout_s: float | None = None,
          on_result=None) -> Run:
    """Run the checks `ids` of `problem` (a Problem) on file `impl`; on_result(Result) is called as each ends."""
    limit = timeout_s or problem.timeout_s
    pending, results = list(ids), []
    started = time.monotonic()
    run = Run(problem.name, str(impl), device, results)

    def record(result):
        result.info = run.catalogue.get(result.id)
        results.append(result)
        if on_result:
            on_result(result)

    imported = False
    while pending:
        worker = _Worker(problem.name, impl, device, lang, pending)
        current, t0 = None, time.monotonic()
        while True:
            budget_left = TOTAL_BUDGET_S - (time.monotonic() - started)
            wait = min(limit, max(budget_left, 0.1))
            if current is None:
                wait = max(wait, 60.0)   # starting python + torch is not the learner's time
            elif current == "__import__":
                wait = max(wait, float(os.environ.get("COURSE_IMPORT_LIMIT_S") or IMPORT_LIMIT_S))
            try:
                event = worker.next_event(wait)
            except BaseException:                   # Ctrl-C (e.g. in --watch): the worker must not outlive us
                worker.kill()
                raise
            if event is None or event.get("event") == "eof":
                stack = worker.stack() if event is None and current is not None else ""
                why = worker.kill()
                status = "timeout" if event is None else "crash"
                lines, where = hang_site(stack, impl, lang) if stack else ([], None)
                if not imported:
                    run.import_error = Result("__import__", status, lines if event is None else [why], where)
                    return run
                current = current if current not in (None, "__import__") else pending[0]
                record(Result(current, status, lines if event is None else [why], where,
                              seconds=time.monotonic() - t0))
                pending.remove(current)
                if status == "timeout":                 # the rest would call the same code: stop here
                    run.timed_out = current
                    for rest in pending:
                        record(Result(rest, "not_run", [current]))
                    pending = []
                elif time.monotonic() - started > TOTAL_BUDGET_S:
                    for rest in pending:
                        record(Result(rest, "skip", ["time budget used up"]))
                    pending = []
                break
            if event["event"] == "catalogue":
                run.catalogue = {cid: CheckInfo(cid, zh, en, Hint(*hint) if hint else None)
                                 for cid, (zh, en, hint) in event["checks"].items()}
                run.cuda = bool(event.get("cuda"))
                continue
            if event["event"] == "start":
                current, t0 = event["id"], time.monotonic()
                continue
            if event["id"] == "__import__":
                if event["status"] != "pass":
                    worker.kill()
                    run.import_error = _result(event, 0.0)
                    return run
                current, imported = None, True
                continue
            record(_result(event, time.monotonic() - t0))
            pending.remove(event["id"])
            current = None
            if not pending:
                worker.kill()
                break
    return run


def grade_in_process(problem, impl, ids, device: str = "cpu", lang: str = "en") -> dict:
    """Run checks in this process (no time limit): {check id: Result}. For the self-tests and notebooks."""
    from course.grader.worker import run

    events = []
    run(problem.name, str(impl), device, lang, list(ids), events.append)
    ends = [e for e in events if e["event"] == "end"]
    return {e["id"]: _result(e, 0.0) for e in ends if e["id"] != "__import__" or e["status"] != "pass"}
