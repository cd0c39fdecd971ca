"""The context p08-kernel's checks run in: p08's SamplerCtx plus running one step function of the learner's file in
the grader's probe kernels, with what a kernel can do wrong (a load past the row, a helper that does not trace)
turned into a report line that says so."""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from course.grader.checks import Fail, Missing
from course.kernel_interp import OutOfBounds, innermost, todo_refused
from tests.p08.context import STEP_OF_PROBLEM, SamplerCtx, StepFirst

STEP_OF_KERNEL = {  # check id -> (zh, en): the step whose rule the check grades, as a fix-first line names it
    "K1.launch": ("第 1 步 launch_config", "step 1, launch_config"),
    "K1.row_max": ("第 1 步 row_max", "step 1, row_max"),
    "K2.kth_largest": ("第 2 步 kth_largest", "step 2, kth_largest"),
    "K3.units": ("第 3 步 units", "step 3, units"),
    "K3.mass_at_least": ("第 3 步 mass_at_least", "step 3, mass_at_least"),
    "K4.top_p_cut": ("第 4 步 top_p_cut", "step 4, top_p_cut"),
    "K5.draw": ("第 5 步 draw", "step 5, draw"),
}


STEP_OF_PROBLEM["p08-kernel"] = STEP_OF_KERNEL

# a stub's unwritten step: raise _todo(2, "kth_largest")
_TODO_CALL = re.compile(r'raise (_todo\((\d+[a-z]?), "([\w.]+)"\))')


@dataclass
class KernelCtx(StepFirst, SamplerCtx):
    """SamplerCtx for the kernel level: the learner's jit functions run inside the grader's probe kernels; a whole
    check that fails while a step check fails names that step first (StepFirst)."""
    step_functions: ClassVar[dict] = {cid: "launch_config" if cid == "K1.launch" else cid.split(".")[1]
                                      for cid in STEP_OF_KERNEL}
    step_depends: ClassVar[dict] = {"K3.mass_at_least": ("K3.units",), "K4.top_p_cut": ("K3.units", "K3.mass_at_least"),
                                    "K5.draw": ("K3.units",)}   # the steps whose code each one calls
    independent: ClassVar[frozenset] = frozenset({"C1"})  # what the compiler refuses is its own cause

    def where(self, name) -> str | None:
        """file:line of `name`, or the place itself when a check already knows the line ("mine/x.py:42")."""
        if ":" in str(name) and str(name).rsplit(":", 1)[1].isdigit():
            return name
        return super().where(name)

    def run(self, check) -> None:
        """StepFirst's run; a step not written yet reads as such on a GPU too (kernel_cause)."""
        try:
            super().run(check)
        except (Fail, Missing, NotImplementedError):
            raise
        except Exception as exc:
            cause = self.kernel_cause(exc)
            if isinstance(cause, NotImplementedError):
                raise cause from None
            raise

    def kernel_cause(self, exc, name=None) -> BaseException:
        """What a kernel raised, as the learner reads it: under the interpreter's wrappers (innermost); and where the
        kernel is compiled (a GPU), a stub's `raise _todo(...)` never runs: Triton refuses the reference to _todo
        ("Unsupported function referenced") or the raise. Then it is the NotImplementedError that the unwritten step
        raises in the interpreter, at its line of the file: step `name`'s own, else that of a step it calls, else the
        file's first."""
        inner = innermost(exc)
        if isinstance(inner, NotImplementedError) or not todo_refused(inner):
            return inner
        lines = Path(self.impl_path).read_text(encoding="utf-8").splitlines()
        todos = [(number, m) for number, text in enumerate(lines, 1) for m in [_TODO_CALL.search(text)] if m]
        fn = getattr(self.impl, name, None) if name else None
        called = set(re.findall(r"\b(\w+)\(", inspect.getsource(getattr(fn, "fn", fn)))) if fn else set()
        mine = [todo for todo in todos if todo[1][3] == name] or [todo for todo in todos if todo[1][3] in called]
        if not (mine or todos):
            return inner
        number, m = (mine or todos)[0]
        try:                                   # the file's own _todo, raised at that line: the report's usual "todo"
            exec(compile("\n" * (number - 1) + "raise " + m[1], self.impl_path, "exec"), vars(self.impl))
        except NotImplementedError as todo:
            return todo
        return inner

    def step_fn(self, name):
        """The learner's @triton.jit function `name` (Missing when the file has none)."""
        fn = getattr(self.impl, name, None)
        if fn is None:
            raise Missing(name)
        return fn

    def probe(self, name, called, run, *args):
        """run(fn, *args, device) with the learner's `name`; a kernel's error says which call made it."""
        try:
            return run(self.step_fn(name), *args, self.device)
        except (Fail, Missing):
            raise
        except Exception as exc:  # noqa: BLE001 - a learner's kernel may raise anything
            raise self.kernel_error(exc, called, name) from None

    def kernel_error(self, exc, called, name):
        """The exception to report for a kernel that raised: a load or store out of bounds as a Fail, the rest as it
        is (the worker finds the learner's line in its traceback), noting the call."""
        inner = self.kernel_cause(exc, name)
        if isinstance(inner, OutOfBounds):
            line = f"{self.file}:{inner.line[1]}" if inner.line else None
            return Fail(called + " -> " + self.t(f"越界的{'读' if inner.kind == 'load' else '写'}：{inner.name} 的第 "
                                                 f"{inner.element} 个元素（它只有 {inner.numel} 个，形状 {list(inner.shape)}）",
                                                 f"a {inner.kind} out of bounds: element {inner.element} of {inner.name} "
                                                 f"(it has {inner.numel}, shape {list(inner.shape)})"),
                        self.t("读过了这一行的末尾：最后一块里 cols >= V 的列要用 mask 挡住（tl.load(..., mask=cols < V, "
                               "other=...)）；在 GPU 上这会读到下一行或者非法地址",
                               "a read past the end of the row: in the last block the columns cols >= V must be masked "
                               "(tl.load(..., mask=cols < V, other=...)); on a GPU it reads the next row or faults")
                        if inner.kind == "load" else
                        self.t("写过了输出的末尾：tl.store 也要 mask=cols < V", "a write past the end of the output: "
                               "tl.store needs mask=cols < V too"),
                        where=line or name)
        if isinstance(inner, NotImplementedError):
            return inner
        try:
            inner.add_note(called)
        except AttributeError:
            pass
        return inner
