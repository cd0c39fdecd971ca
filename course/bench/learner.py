"""A learner's FastSampler for the benchmark: `--impl FILE` (or `--impl mine`), loaded, probed and guarded.

The benchmark times whatever file it is given; whether that file is right is the grader's job
(`./check.sh p08-fast --impl FILE`). What this module makes sure of is that a file which cannot be timed says so
in one line (no traceback): it does not exist, cannot be imported, has no FastSampler, is still a stub, raises,
returns something that is not a token per row, or takes longer than LIMIT_S for one call; and that its print()
calls, once per timed call, are counted instead of flooding the screen.
"""
from __future__ import annotations

import contextlib
import io
import signal
import sys
import threading
import time
from pathlib import Path

import torch

from course import problems
from course.lang import pick
from course.loader import TorchState, load_module
from course.problems import relpath
from course.sampling_params import SamplingParams

LIMIT_S = 60.0        # one sample() call of a learner's file longer than this is taken for a hang
MINE = "mine"         # --impl mine: the learner's own stub file, mine/p08_sampler_fast.py


class LearnerError(Exception):
    """A learner's file that cannot be timed; str() is the one line the benchmark prints, text(lang) the same line
    in a notebook's language (the file's own error, paths and commands stay as they are)."""

    def __init__(self, en: str, zh: str | None = None):
        super().__init__(en)
        self.zh = zh or en

    def text(self, lang: str = "en") -> str:
        return pick(lang, self.zh, str(self))


class _Overtime(BaseException):
    """Raised inside the learner's call by the alarm (a BaseException: a bare `except Exception` keeps it)."""


def resolve(spec) -> Path:
    """'mine' -> mine/p08_sampler_fast.py; any other value is a path (relative to the working folder: the command
    line's `--impl FILE`)."""
    if spec == MINE:
        return problems.get("p08-fast").path("stub")
    return Path(spec).expanduser().resolve()


def repo_file(path) -> Path:
    """A learner's file as an absolute path: a relative one ('mine/p08_sampler_fast.py', as relpath shows it) is
    taken from the repo root, never from the working folder (a notebook's kernel runs in notebooks/ or
    notebooks/en/)."""
    path = Path(path).expanduser()
    return (path if path.is_absolute() else problems.ROOT / path).resolve()


@contextlib.contextmanager
def deadline(seconds: float):
    """Raise _Overtime in the block after `seconds` (main thread with SIGALRM only; elsewhere no limit)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def overtime(signum, frame):
        raise _Overtime()

    previous = signal.signal(signal.SIGALRM, overtime)
    start = time.monotonic()
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)            # an alarm someone else set, if any
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:                                                        # set theirs again, less the time spent
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.001))


def _one_line(error: BaseException) -> str:
    """'ValueError: its message' on one line, at most 160 characters of the message."""
    text = " ".join(str(error).split())
    if not text:
        return type(error).__name__
    return f"{type(error).__name__}: {text[:160]}{'...' if len(text) > 160 else ''}"


def grade_command(name: str) -> str:
    """The command that grades the file `name` (as the learner sees its path)."""
    stub = relpath(problems.get("p08-fast").path("stub"))
    return "./check.sh p08-fast" + ("" if name == stub else f" --impl {name}")


def guarded_call(name: str, call, what: str, limit_s: float | None = None, what_zh: str | None = None):
    """call() under the deadline (LIMIT_S by default); whatever goes wrong becomes a LearnerError naming the file
    and `what` ran (what_zh: the same in Chinese, e.g. '在 ... 上调用 sample() 时')."""
    limit_s = LIMIT_S if limit_s is None else limit_s
    what_zh = what_zh or f"{what} "
    grade = grade_command(name)
    try:
        with deadline(limit_s):
            return call()
    except _Overtime:
        raise LearnerError(f"{name}: {what} ran past {limit_s:g} s (a loop that never ends?); {grade} checks it "
                           "step by step",
                           f"{name}：{what_zh}超过 {limit_s:g} s 还没返回（死循环？）；"
                           f"{grade} 会一步一步检查它") from None
    except NotImplementedError as error:
        message = " ".join(str(error).split())
        raise LearnerError(f"{name}: not implemented yet ({message}); finish the steps ({grade}), then time it",
                           f"{name}：还没实现（{message}）；先完成各步（{grade}），再计时") from None
    except Exception as error:         # the learner's bug: one line here, the grader shows the rest
        raise LearnerError(f"{name}: {what} raised {_one_line(error)}; {grade} shows where",
                           f"{name}：{what_zh}抛出 {_one_line(error)}；{grade} 会指出在哪里") from None


def check_tokens(name: str, tokens, batch: int, vocab: int, where: str, where_zh: str | None = None) -> None:
    """A LearnerError unless tokens is an integer tensor [batch] of ids in [0, vocab) (where_zh: `where` in
    Chinese, e.g. '在 ... 上')."""
    shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else None
    ok = (shape == (batch,) and not tokens.dtype.is_floating_point and not tokens.dtype.is_complex
          and tokens.dtype != torch.bool and bool(((tokens >= 0) & (tokens < vocab)).all()))
    if not ok:
        got = f"{type(tokens).__name__} {list(shape)} {tokens.dtype}" if shape is not None else type(tokens).__name__
        raise LearnerError(f"{name}: called sample() {where}, returned {got}, expected a LongTensor [{batch}] of "
                           f"token ids in [0, {vocab})",
                           f"{name}：{where_zh or where + ' '}调用 sample()，返回 {got}，应为 LongTensor [{batch}]，"
                           f"token id 在 [0, {vocab}) 内")


def load(spec: str):
    """(shown name, a zero-argument factory of the file's FastSampler), probed on a tiny batch; or LearnerError."""
    path = resolve(spec)
    name = relpath(path)
    if not path.is_file():
        raise LearnerError(f"--impl {spec}: no such file {name}", f"--impl {spec}：没有这个文件 {name}")
    state = TorchState()
    try:
        try:
            with deadline(LIMIT_S), muted():
                module = load_module(path, "bench_impl")
        except _Overtime:
            raise LearnerError(f"{name}: importing it ran past {LIMIT_S:g} s",
                               f"{name}：导入超过 {LIMIT_S:g} s 还没结束") from None
        except Exception as error:
            raise LearnerError(f"{name}: cannot be imported ({_one_line(error)})",
                               f"{name}：无法导入（{_one_line(error)}）") from None
        factory = getattr(module, "FastSampler", None)
        if not callable(factory):
            raise LearnerError(f"{name}: has no FastSampler class (the benchmark times FastSampler().sample)",
                               f"{name}：没有 FastSampler 类（基准测试计时的是 FastSampler().sample）")
        with muted():
            probe(name, factory)
    finally:
        state.restore()
    return name, factory


def probe(name: str, factory) -> None:
    """Sample a 2-row batch once (a seeded top-k/top-p row and a greedy one): it must run and return tokens."""
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0], [0.0, 3.0, 1.0, 0.5, 0.2]])        # [B=2, V=5]
    params = [SamplingParams(top_k=3, top_p=0.9, seed=0), SamplingParams(temperature=0.0)]
    where, where_zh = "on a 2-row probe batch", "在 2 行的探测 batch 上"
    sampler = guarded_call(name, factory, "FastSampler()")
    tokens = guarded_call(name, lambda: sampler.sample(logits, ["probe-a", "probe-b"], params, [[], []]),
                          f"sample() {where}", what_zh=f"{where_zh}调用 sample() 时")
    check_tokens(name, tokens, 2, 5, where, where_zh)


def yours_line(name, lang="en") -> str:
    """What the column 'yours' is, and where it is graded (the benchmark times it as it is)."""
    return pick(lang, f"yours = {name}（对不对：{grade_command(name)}）",
                f"yours = {name} (is it right? {grade_command(name)})")


class Muted(io.TextIOBase):
    """A stream that keeps nothing and counts the lines written to it."""

    def __init__(self):
        super().__init__()
        self.lines = 0

    def writable(self):
        return True

    def write(self, text):
        self.lines += text.count("\n")
        return len(text)


@contextlib.contextmanager
def muted(active=True):
    """sys.stdout goes to a Muted stream for the block (when active): a learner's print() in sample() would flood
    the screen once per timed call. Yields the stream (.lines: how many lines were printed)."""
    stream = Muted()
    if not active:
        yield stream
        return
    saved, sys.stdout = sys.stdout, stream
    try:
        yield stream
    finally:
        sys.stdout = saved


def printed_note(results, lang="en") -> str:
    """One line when a learner's file printed while it was timed (hidden, and its cost counted), else ''."""
    lines = sum(r.get("printed", 0) for r in results)
    if not lines:
        return ""
    return pick(lang, f"你的文件计时时打印了 {lines} 行：这里不显示，打印的耗时算在它的时间里。",
                f"Your file printed {lines} line{'s' * (lines != 1)} while it was timed: they are not shown, and "
                "printing them is part of its time.")
