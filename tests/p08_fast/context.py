"""The context p08-fast's checks run in: p08's SamplerCtx (course.toml: `context = "tests.p08_fast.context:FastCtx"`),
plus one rule of the report. The learner writes five steps and the given batch code puts them together, so when a
whole-sampler check fails while one of the file's own steps fails its step check (T1-T5, re-run here on the file's
functions), that step is the cause the grader has established first: the failure says "fix T4.filter_window first"
with the step check's own evidence, and the report shows that cause once, under the step check."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tests.p08.context import SamplerCtx, StepFirst

STEP_FUNCTION = {"T1.route": "route", "T2.window_topk": "window_topk", "T2.canonical_window": "canonical_window",
                 "T3.row_total": "row_total", "T4.filter_window": "filter_window",
                 "T4.certain": "filter_window", "T5.inverse_cdf": "inverse_cdf",
                 "T5.streams": "FastSampler._uniforms"}


@dataclass
class FastCtx(StepFirst, SamplerCtx):
    step_functions: ClassVar[dict] = STEP_FUNCTION
