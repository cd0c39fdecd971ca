"""The context p08-fast's checks run in: p08's SamplerCtx (course.toml: `context = "tests.p08_fast.context:FastCtx"`),
plus one rule of the report. The learner writes five steps and the given batch code puts them together, so when a
whole-sampler check fails while one of the file's own steps fails its step check (T1-T5, re-run here on the file's
functions), that step is the cause the grader has established first: the failure says "fix T4.filter_window first"
with the step check's own evidence, and the report shows that cause once, under the step check."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch

from course.grader.checks import Fail, Missing, checks_for
from tests.p08.context import SamplerCtx, fix_first_line

FIX_FIRST = re.compile(r"fix (T\d[\w.]*) first|先修好 (T\d[\w.]*)")
STEP_FUNCTION = {"T1.route": "route", "T2.window_topk": "window_topk", "T2.canonical_window": "canonical_window",
                 "T3.row_total": "row_total", "T4.filter_window": "filter_window", "T5.inverse_cdf": "inverse_cdf",
                 "T5.streams": "FastSampler._uniforms"}


def _lines_of(ctx, exc) -> list:
    """What the report would show for exc: a Fail's lines, or a crash's line (and the call it noted)."""
    if isinstance(exc, Fail):
        return list(exc.lines)
    from course.grader.worker import classify
    return classify(exc, Path(ctx.impl_path).resolve(), ctx.lang)["lines"]


@dataclass
class FastCtx(SamplerCtx):
    def run(self, check) -> None:
        steps = [cid for ids in self.problem.steps for cid in ids]
        if check.id in steps:
            check.fn(self)
            return
        try:
            check.fn(self)
        except (NotImplementedError, Missing):
            raise
        except Exception as exc:
            if isinstance(exc, Fail) and any(FIX_FIRST.search(line) for line in exc.lines):
                raise                                        # it already names a step as its cause
            wrong = self.first_wrong_step(steps)
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
                where = exc.where if isinstance(exc, Fail) and exc.where else STEP_FUNCTION.get(step)
                return step, _lines_of(ctx, exc), tuple(hint) if hint else None, where
        return None
