"""The check framework: how an acceptance check is declared, what it may call, and how it says what broke.

A check is a function `fn(ctx)` registered with @check. It calls the learner's code through `ctx`, and
raises `Fail(...)` with concrete lines ("called ..., returned ..., expected ...") when something is wrong.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import torch

from course.grader.info import CheckInfo, Hint
from course.lang import pick
from course.problems import relpath

_REGISTRY: dict = {}     # check id -> Check, from every check module imported so far


@dataclass
class Check(CheckInfo):
    """A check as declared: what the report shows of it (course/grader/info.py) and the function that runs it."""
    fn: object = None
    needs: tuple = ()


def check(check_id, title_zh, title_en, hint, needs=()):
    """Register fn as an acceptance check; hint = (problem, level, anchor). Which problems run it, and in which
    order, is said once, in course.toml."""
    def register(fn):
        known = _REGISTRY.get(check_id)
        if known is not None and (known.fn.__module__, known.fn.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"check id {check_id!r} is declared twice: {known.fn.__module__} and {fn.__module__}")
        _REGISTRY[check_id] = Check(check_id, title_zh, title_en, Hint(*hint), fn=fn, needs=tuple(needs))
        return fn
    return register


def checks_for(problem) -> list:
    """The checks of a problem (course.problems.Problem), in the order course.toml lists them."""
    import importlib
    for name in problem.check_modules:
        importlib.import_module(name)
    unknown = [cid for cid in problem.checks if cid not in _REGISTRY]
    if unknown:
        raise KeyError(f"course.toml: {problem.name} lists checks that no module of its check_modules declares: "
                       f"{', '.join(unknown)}")
    return [_REGISTRY[cid] for cid in problem.checks]


class Fail(Exception):
    """A check's verdict: lines saying what was called, what came back, what was expected."""

    def __init__(self, *lines, hint: tuple | None = None, where: str | None = None):
        super().__init__("\n".join(lines))
        self.lines = list(lines)
        self.hint = Hint(*hint) if hint else None
        self.where = where


class WrongOutput(Fail):
    """sample() returned something other than a LongTensor [B] of ids on the logits' device: that is the cause
    itself, so no check re-runs other steps to explain it (S6 is the check aimed at it)."""


class Explained(Fail):
    """sample() raised, and an earlier step of the learner's own is wrong on a row of that very call: the verdict
    names that step, so no check looks for another cause."""


# a learner's exception that a check re-raises as it is instead of looking for a cause
RAISE_AS_IS = (NotImplementedError, WrongOutput, Explained)


class Missing(Exception):
    """The learner's file lacks a name the check needs."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


# ---- formatting concrete values ----------------------------------------------------------------------
def fmt_num(x) -> str:
    x = float(x)
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    if math.isnan(x):
        return "nan"
    return f"{x:.4g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


def fmt_vec(values, limit: int = 8) -> str:
    values = values.detach().flatten().tolist() if isinstance(values, torch.Tensor) else list(values)
    shown = ", ".join(fmt_num(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]" + (f" (V={len(values)})" if len(values) > limit else "")


def fmt_set(ids) -> str:
    ids = sorted(int(i) for i in ids)
    return "{" + ", ".join(map(str, ids[:12])) + (", ..." if len(ids) > 12 else "") + "}"


def describe(obj) -> str:
    """A short description of what a learner's function returned."""
    if isinstance(obj, torch.Tensor):
        return f"tensor(shape={list(obj.shape)}, dtype={str(obj.dtype).replace('torch.', '')}, device={obj.device})"
    text = repr(obj)
    return f"{type(obj).__name__} {text[:60]}"


def _noting(called: str, fn, *args, **kwargs):
    """Call a learner's function; an exception it raises carries a note saying how it was called."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except Exception as exc:
        exc.add_note(called)
        raise


# ---- the context a check runs in ---------------------------------------------------------------------
@dataclass
class Ctx:
    """What every check gets: the learner's module, where it lives, the device and the language. A problem whose
    checks need more (e.g. calling a sampler and checking its output) subclasses it beside its checks and names
    the subclass in course.toml (`context = "module:Class"`)."""
    problem: object          # course.problems.Problem
    impl: object             # the learner's module, freshly imported for this check
    impl_path: str
    device: str = "cpu"
    lang: str = "zh"
    notes: list = field(default_factory=list)      # shown under a passing check too (e.g. a measured ratio)

    @property
    def file(self) -> str:
        return relpath(self.impl_path)

    def t(self, zh: str, en: str) -> str:
        return pick(self.lang, zh, en)

    def fn(self, name):
        """The learner's function or class called `name`."""
        obj = getattr(self.impl, name, None)
        if obj is None:
            raise Missing(name)
        return obj

    def where(self, name) -> str | None:
        """file:line where the learner defines `name` (a function, class or Class.method)."""
        obj = self.impl
        for part in name.split("."):
            obj = getattr(obj, part, None)
        try:
            return f"{self.file}:{inspect.getsourcelines(obj)[1]}"
        except (TypeError, OSError):
            return None

    def tensor(self, values, dtype=torch.float32):
        return torch.tensor(values, dtype=dtype, device=self.device)

    def run(self, check) -> None:
        """Run one check in this context (the worker calls this); a problem's context may wrap it, e.g. to ask
        the learner's earlier steps first when a later check fails."""
        check.fn(self)
