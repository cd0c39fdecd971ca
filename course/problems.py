"""Problem metadata from course.toml: the single place that says what each problem is made of.

COURSE_TOML=FILE reads another file of the same form instead (paths in it are relative to the repo root): the
self-tests grade a tiny second problem that way, with no edit to the grader."""
from __future__ import annotations

import importlib
import os
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Problem:
    name: str
    title_zh: str
    title_en: str
    stub: str
    solution: str
    check_modules: tuple     # the modules that declare its checks (imported by the grader)
    checks: tuple            # its check ids, in the order the report shows them
    notebook: str
    hints: str
    todo_tag: str
    timeout_s: float
    next_zh: str
    next_en: str
    notebook_en: str = ""   # the English notebook (built from the same source as `notebook`)
    context: str = "course.grader.checks:Ctx"   # "module:Class" of the context its checks run in
    steps: tuple = ()        # per TODO step, the check ids that pass as soon as that step is right (--step N)
    step_names: tuple = ()   # the steps' names as the stub's TODOs number them ("1", ..., "4a", "4b", ...)
    sampler_class: str = ""  # a problem's own fields, for its context and notebooks (p08: the class that samples,
    functions: tuple = ()    # and the step functions a learner writes beside it)
    hints_from: tuple = ()   # ((problem, level, anchor), (level, anchor)): where a shared check's pointer into another
    #                          problem's hints points in this problem's (course.hints.resolve)
    setup: str = ""          # "module:function" the grader's worker calls with the device before it imports the file
    #                          (p08-kernel: Triton's interpreter on a CPU)

    def title(self, lang: str) -> str:
        return self.title_zh if lang == "zh" else self.title_en

    def next_step(self, lang: str) -> str:
        return self.next_zh if lang == "zh" else self.next_en

    def step_checks(self, name: str) -> tuple | None:
        """The check ids of step `name` ("4a"), or of all its lettered parts ("4": 4a, 4b, ...); None: no such step."""
        named = dict(zip(self.step_names, self.steps))
        if name in named:
            return named[name]
        parts = [ids for step, ids in named.items() if re.fullmatch(rf"{re.escape(name)}[a-z]", step)]
        return tuple(cid for ids in parts for cid in ids) if parts else None

    def prepare(self, device: str) -> None:
        """Run the problem's setup for `device` (before the learner's file is imported), if it has one."""
        if self.setup:
            module, _, name = self.setup.partition(":")
            getattr(importlib.import_module(module), name)(device)

    def context_class(self):
        module, _, name = self.context.partition(":")
        return getattr(importlib.import_module(module), name)

    def path(self, which: str) -> Path:
        """Absolute path of 'stub', 'solution', 'notebook', 'notebook_en' or 'hints'."""
        return ROOT / getattr(self, which)


def toml_path() -> Path:
    return Path(os.environ.get("COURSE_TOML") or ROOT / "course.toml")


@lru_cache(maxsize=None)
def problems() -> dict:
    data = tomllib.loads(toml_path().read_text(encoding="utf-8"))
    out = {}
    for name, entry in data["problems"].items():
        steps = entry.get("steps", ())          # a list (steps 1..N) or a table {"1" = [...], "4a" = [...]}
        names = tuple(steps) if isinstance(steps, dict) else tuple(str(n) for n in range(1, len(steps) + 1))
        hints_from = tuple(((other, int(key.split()[0]), key.split()[1]), (int(to.split()[0]), to.split()[1]))
                           for other, table in entry.get("hints_from", {}).items() for key, to in table.items())
        entry = dict(entry, functions=tuple(entry.get("functions", ())), checks=tuple(entry["checks"]),
                     check_modules=tuple(entry["check_modules"]), step_names=names, hints_from=hints_from,
                     steps=tuple(tuple(ids) for ids in (steps.values() if isinstance(steps, dict) else steps)))
        out[name] = Problem(name=name, **entry)
    return out


def get(name: str) -> Problem:
    try:
        return problems()[name]
    except KeyError:
        raise KeyError(f"unknown problem {name!r}; known: {', '.join(problems())}") from None


def relpath(path) -> str:
    """A path as the learner sees it: relative to the repo root when inside it."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)
