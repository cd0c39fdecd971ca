"""The context p08's checks (and p08-fast's) run in: the generic Ctx plus calling a sampler and checking what it
returns. course.toml names it (`context = "tests.p08.context:SamplerCtx"`); the grader itself knows no sampler."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from course.grader.checks import Ctx, Explained, Fail, Missing, WrongOutput, _noting, checks_for, describe, fmt_vec
from course.sampling_params import SamplingParams as GivenParams

_CRASH_EXPLAINERS: dict = {}   # problem name -> fn(ctx, observed, cases) that raises Explained or returns


def crash_explainer(*problems):
    """Register fn(ctx, observed, cases) to run when the learner's sample() raises: cases = (row, params, prev)
    of the call's first rows; fn raises Explained when one of the learner's earlier steps is wrong on them."""
    def register(fn):
        for name in problems:
            _CRASH_EXPLAINERS[name] = fn
        return fn
    return register


def params_text(p) -> str:
    """Only the fields that differ from the defaults, e.g. 'temperature=0.5, top_k=2'."""
    defaults = GivenParams()
    parts = [f"{k}={getattr(p, k)!r}" for k in ("temperature", "top_k", "top_p", "repetition_penalty", "seed")
             if getattr(p, k, None) != getattr(defaults, k)]
    return ", ".join(parts) or "defaults"


def _history(prev):
    """One request's prev_tokens as a plain list (a learner's sample() may have replaced it with anything)."""
    try:
        return list(prev.tolist() if isinstance(prev, torch.Tensor) else prev)
    except Exception:  # noqa: BLE001 - not a sequence any more: that is a change too
        return [repr(prev)[:40]]


STEP_OF = {  # check id -> (zh, en): the step of the stub whose rule that check grades, as a fix-first line names it
    "E1.penalty": ("第 1 步 apply_repetition_penalty", "step 1, apply_repetition_penalty"),
    "E1.history": ("第 1 步：sample() 里的 penalty", "step 1, the penalty inside sample()"),
    "E1.greedy": ("第 1-2 步：penalty 在 greedy 判断之前", "steps 1-2, the penalty before the greedy test"),
    "I3": ("第 2 步：greedy 判断", "step 2, the greedy test"),
    "E2.small_t": ("第 3 步：温度", "step 3, the temperature"),
    "E2.temperature": ("第 3 步：温度", "step 3, the temperature"),
    "E2.top_k": ("第 4 步 apply_top_k", "step 4, apply_top_k"),
    "E2.top_p": ("第 5 步 apply_top_p", "step 5, apply_top_p"),
    "S6": ("第 6 步：sample() 的返回值", "step 6, what sample() returns"),
    "I5": ("第 6 步：每个请求自己的 generator", "step 6, each request's own generator"),
    "I2": ("不改调用方的输入", "leaving the caller's inputs untouched"),
    "S1-5": ("步骤的顺序（penalty → greedy → 温度 → top-k → top-p）",
             "the order of the steps (penalty, greedy, temperature, top-k, top-p)"),
}


STEP_OF_PROBLEM: dict = {}  # problem name -> its own {check id -> (zh, en)}, ahead of STEP_OF (a follow-up's steps)


def fix_first_line(ctx, check_id) -> str:
    """'the cause is step 5, apply_top_p: fix E2.top_p first': the root cause's step and its check, in one line (the
    report's `next:` line repeats it)."""
    own = STEP_OF_PROBLEM.get(ctx.problem.name, {})
    zh, en = own.get(check_id) or STEP_OF.get(check_id, (f"{check_id} 检查的那条规则", f"the rule {check_id} checks"))
    return ctx.t(f"原因在{zh}：先修好 {check_id}", f"the cause is {en}: fix {check_id} first")



@dataclass
class SamplerCtx(Ctx):
    """Ctx for a problem whose learner writes a sampler: make one, call sample() and check what it returns."""
    explaining: bool = False                       # a crash is being explained: its probes are not explained again
    changed_inputs: list = field(default_factory=list)  # how sample() changed a caller's prev_tokens, the first time

    @property
    def has_functions(self) -> bool:
        return bool(self.problem.functions)

    def sampler(self):
        return self.fn(self.problem.sampler_class)()

    @property
    def sampler_name(self) -> str:
        return self.problem.sampler_class

    def params(self, **kwargs):
        cls = getattr(self.impl, "SamplingParams", None) or GivenParams
        return cls(**kwargs)

    # -- calling the learner's code, with the result checked for type and shape --
    def vector(self, name, *args, **kwargs):
        """Call the function `name` that must return a new floating tensor shaped like args[0]."""
        like = args[0]
        shown = ", ".join([fmt_vec(like)] + [repr(a) if not isinstance(a, torch.Tensor) else fmt_vec(a) for a in args[1:]])
        before = like.clone()
        out = _noting(self.t("调用 ", "called ") + f"{name}({shown})", self.fn(name), *args, **kwargs)
        if not torch.equal(like, before):
            raise Fail(self.t(f"调用 {name}({shown}) 之后，输入变成了 {fmt_vec(like)}", f"called {name}({shown}): the input is now "
                              f"{fmt_vec(like)}"),
                       self.t(f"{name} 原地改了传给它的张量：先 clone 再改（调用方的 logits 也会被改掉）",
                              f"{name} changed the tensor it was given, in place: clone first, then edit the copy (or the "
                              f"caller's logits change too)"), hint=("p08", 2, "traps"), where=name)
        if not isinstance(out, torch.Tensor) or out.shape != like.shape or not out.is_floating_point():
            raise Fail(self.t("调用 ", "called ") + f"{name}({shown}) -> {describe(out)}",
                       self.t(f"期望：一个形状为 {list(like.shape)} 的浮点张量", f"expected a floating tensor of shape {list(like.shape)}"),
                       where=name)
        if torch.isnan(out).any():
            raise Fail(self.t("调用 ", "called ") + f"{name}({shown}) -> {fmt_vec(out)}",
                       self.t("结果里有 NaN", "the result holds NaN"), where=name)
        return out

    def _output_problems(self, out, batch, device) -> list:
        """What is wrong with sample()'s return value, one line each (empty when it is a LongTensor [B] on device)."""
        if not isinstance(out, torch.Tensor):
            return [self.t(f"返回的是 {type(out).__name__}，不是张量", f"it returned a {type(out).__name__}, not a tensor")]
        problems = []
        if out.dtype != torch.long:
            problems.append(self.t(f"dtype 是 {str(out.dtype)[6:]}：要 torch.long（int64），例如 .long() 或 dtype=torch.long",
                                   f"its dtype is {str(out.dtype)[6:]}: it must be torch.long (int64), e.g. .long() or "
                                   f"dtype=torch.long"))
        if tuple(out.shape) != (batch,):
            problems.append(self.t(f"形状是 {list(out.shape)}，要 [{batch}]" + ("（去掉最后那一维）" if tuple(out.shape) == (batch, 1) else ""),
                                   f"its shape is {list(out.shape)}, it must be [{batch}]"
                                   + (" (drop the last dim)" if tuple(out.shape) == (batch, 1) else "")))
        if out.device.type != device.type:
            problems.append(self.t(f"它在 {out.device} 上，要和 logits 一样在 {device} 上",
                                   f"it is on {out.device}, it must be on the logits' device {device}"))
        return problems

    def _explain_crash(self, exc, called, logits, params, prev_tokens, rows=8):
        """sample() raised exc: raise Explained if the problem's explainer finds an earlier step wrong on one of the
        call's first rows; otherwise return, and the caller re-raises exc as it is."""
        explain = _CRASH_EXPLAINERS.get(self.problem.name)
        if explain is None or self.explaining or isinstance(exc, (NotImplementedError, Fail)):
            return
        self.explaining = True
        try:
            cases = [(row, p, [int(t) for t in _history(prev)]) for row, p, prev in
                     zip(logits[:rows].float().tolist(), params, prev_tokens)]
            explain(self, f"{called} " + self.t("抛出", "raised") + f" {type(exc).__name__}: {str(exc).strip()[:100]}", cases)
        except Explained:
            raise
        except Exception:  # noqa: BLE001 - the explainer's own probe failed: the crash is reported as it is
            return
        finally:
            self.explaining = False

    def sample(self, sampler, logits, req_ids, params, prev_tokens) -> list:
        """sampler.sample(...) checked to be a LongTensor [B] on logits.device with ids in [0, V)."""
        batch, vocab = logits.shape
        method = f"{self.sampler_name}.sample"
        called = (self.t("调用 ", "called ") + f"{method}(logits [{batch}, {vocab}] {str(logits.dtype).replace('torch.', '')}, "
                  f"req_ids={list(req_ids)[:4]}{'...' if batch > 4 else ''}, params[0]: {params_text(params[0])})")
        history = [_history(p) for p in prev_tokens]
        try:
            out = _noting(called, sampler.sample, logits, req_ids, params, prev_tokens)
        except Exception as exc:
            self._explain_crash(exc, called, logits, params, prev_tokens)
            raise
        now = [_history(p) for p in prev_tokens]
        if now != history and not self.changed_inputs:            # a failing check names it first (earlier_step_first)
            row = next(i for i, (a, b) in enumerate(zip(history, now)) if a != b)
            self.changed_inputs = [self.t(f"{called}：prev_tokens[{row}] 从 {history[row][:12]} 变成了 {now[row][:12]}",
                                          f"{called}: prev_tokens[{row}] went from {history[row][:12]} to {now[row][:12]}")]
        problems = self._output_problems(out, batch, logits.device)
        if problems:
            raise WrongOutput(f"{called} -> {describe(out)}",     # what is wrong comes last: the same wrong value is one cause
                              self.t("sample() 的返回值：LongTensor，形状 [B]，和 logits 在同一设备上，第 i 个是 req_ids[i] 的 token",
                                     "sample() returns a LongTensor of shape [B] on the logits' device, row i = req_ids[i]'s "
                                     "token"), *problems, hint=("p08", 1, "d6"), where=method)
        tokens = out.tolist()
        bad = [i for i, t in enumerate(tokens) if not 0 <= t < vocab]
        if bad:
            row = bad[0]
            raise WrongOutput(f"{called} -> {tokens[:8]}{'...' if batch > 8 else ''}",
                              self.t(f"第 {row} 行", f"row {row}") + f" (req_id {req_ids[row]!r}, {params_text(params[row])}): " + self.t(
                                  f"token id {tokens[row]} 不在 [0, {vocab}) 内", f"token id {tokens[row]} is outside [0, {vocab})"),
                              *self._route_line(params, vocab, row), where=method)
        return tokens

    def _route_line(self, params, vocab, row) -> list:
        """For a stub-shaped fast path: the route its own route() gives the row, as a line (else nothing)."""
        route = getattr(self.impl, "route", None)
        if not callable(route):
            return []
        try:
            routes = route(params, vocab)
            name = next(n for n in ("greedy", "top_k", "top_p", "plain", "exact") if row in list(getattr(routes, n)))
        except Exception:  # noqa: BLE001 - its route() cannot say
            return []
        return [self.t(f"你的 route() 把它放在 {name}：看看这条路线（以及不 certain、改走 exact 的行）是否都写回了 tokens",
                       f"your route() puts it on {name}: check that this route (and the rows that are not certain and move "
                       f"to exact) writes its tokens back")]


def _lines_of(ctx, exc) -> list:
    """What the report would show for exc: a Fail's lines, or a crash's line (and the call it noted)."""
    if isinstance(exc, Fail):
        return list(exc.lines)
    from course.grader.worker import classify
    return classify(exc, Path(ctx.impl_path).resolve(), ctx.lang)["lines"]


class StepFirst:
    """One rule of the report for a problem whose learner writes steps that given code puts together (p08-fast,
    p08-kernel): when a whole-sampler check fails while one of the file's own steps fails its step check (re-run
    here on the file's functions), that step is the cause the grader has established first: the failure says "fix
    T4.filter_window first" with the step check's own evidence, and the report shows that cause once, under the step
    check. A subclass names, per step check, the function it grades (`step_functions`); where a step's function calls an
    earlier step's (p08-kernel: top_p_cut calls mass_at_least), `step_depends` names the step checks it asks first;
    a check whose cause is of its own kind (`independent`, e.g. a compiler's) is left as it is."""
    step_functions: ClassVar[dict] = {}
    step_depends: ClassVar[dict] = {}          # step check id -> the step checks of the code it calls
    independent: ClassVar[frozenset] = frozenset()

    def run(self, check) -> None:
        steps = [cid for ids in self.problem.steps for cid in ids]
        earlier = tuple(self.step_depends.get(check.id, ())) if check.id in steps else steps
        if check.id in self.independent or not earlier:
            check.fn(self)
            return
        try:
            check.fn(self)
        except (NotImplementedError, Missing):
            raise
        except Exception as exc:
            named = re.compile("|".join(rf"fix {re.escape(s)} first|先修好 {re.escape(s)}" for s in steps))
            if isinstance(exc, Fail) and any(named.search(line) for line in exc.lines):
                raise                                        # it already names a step as its cause
            wrong = self.first_wrong_step(earlier)
            if wrong is None:
                raise
            step, lines, hint, where = wrong
            raise Fail(_lines_of(self, exc)[0], *lines, fix_first_line(self, step), hint=hint, where=where) from exc

    def first_wrong_step(self, steps):
        """(check id, its failure lines, hint, where) of the first step check that the file's own steps fail, or
        None. Each runs in a context of its own, with torch's random state (initial seed included) put back after."""
        by_id = {c.id: c for c in checks_for(self.problem)}
        for step in steps:
            ctx = type(self)(problem=self.problem, impl=self.impl, impl_path=self.impl_path, device=self.device,
                             lang=self.lang)
            try:
                with torch.random.fork_rng(devices=[]):
                    by_id[step].fn(ctx)
            except (NotImplementedError, Missing):
                continue                                     # not written yet: the check says so itself
            except Exception as exc:  # noqa: BLE001 - a step of the learner's may raise anything
                hint = exc.hint if isinstance(exc, Fail) and exc.hint else by_id[step].hint
                where = exc.where if isinstance(exc, Fail) and exc.where else self.step_functions.get(step)
                return step, _lines_of(ctx, exc), tuple(hint) if hint else None, where
        return None
