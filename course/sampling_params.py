"""SamplingParams (given, not an exercise) and the input checks the reference samplers run."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

GREEDY_TEMPERATURE = 1e-5  # temperature below this means argmax (seed page, step 2)


def _is_int(value) -> bool:
    """An integer of any integral type (torch and numpy ones too), but not a bool; a plain int is checked first."""
    return type(value) is int or isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling settings; bad values raise ValueError naming the field."""

    temperature: float = 1.0
    top_k: int = -1
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    seed: int | None = None

    def __post_init__(self):
        t, p, r = self.temperature, self.top_p, self.repetition_penalty
        if not isinstance(t, numbers.Real) or math.isnan(t) or t < 0 or math.isinf(t):
            raise ValueError(f"SamplingParams.temperature must be a finite number >= 0, got {t!r}")
        if not _is_int(self.top_k):
            raise ValueError(f"SamplingParams.top_k must be an integer (-1 or 0 = off), got {self.top_k!r}")
        if not isinstance(p, numbers.Real) or math.isnan(p) or not 0 < p <= 1:
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {p!r}")
        if not isinstance(r, numbers.Real) or math.isnan(r) or r <= 0 or math.isinf(r):
            raise ValueError(f"SamplingParams.repetition_penalty must be a finite number > 0, got {r!r}")
        if self.seed is not None and not _is_int(self.seed):
            raise ValueError(f"SamplingParams.seed must be an integer or None, got {self.seed!r}")


def validate_sample_inputs(logits, req_ids, params, prev_tokens) -> None:
    """Raise ValueError naming the argument or request when sample() gets a malformed batch."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        what = f"{type(logits).__name__}" if not isinstance(logits, torch.Tensor) else \
            f"{logits.dim()}-D {logits.dtype}"
        raise ValueError(f"logits must be a 2-D floating tensor [B, V], got {what}")
    batch, vocab = logits.shape
    if vocab == 0:
        raise ValueError("logits has V = 0 columns: there is no token to sample")
    for name, seq in (("req_ids", req_ids), ("params", params), ("prev_tokens", prev_tokens)):
        if len(seq) != batch:
            raise ValueError(f"len({name}) = {len(seq)} but logits has B = {batch} rows")
    if _plainly_valid(req_ids, params, prev_tokens, vocab):
        return
    seen = set()                                                  # find the first bad row, in row order
    for req_id, p, prev in zip(req_ids, params, prev_tokens):
        if req_id in seen:
            raise ValueError(f"request {req_id!r} appears twice in one batch")
        seen.add(req_id)
        if not isinstance(p, SamplingParams):
            raise ValueError(f"request {req_id!r}: params must be a SamplingParams, got {type(p).__name__}")
        ids = prev.tolist() if isinstance(prev, torch.Tensor) else list(prev)
        bad = [t for t in ids if not _is_int(t) or not 0 <= t < vocab]
        if bad:
            raise ValueError(f"request {req_id!r}: prev_tokens holds {bad[0]!r}, outside [0, {vocab})")


def _plainly_valid(req_ids, params, prev_tokens, vocab) -> bool:
    """The common batch in a few passes at C speed: distinct ids, SamplingParams, histories that are lists of plain
    ints in [0, vocab). False sends the batch through the row-by-row checks above (every other case, and the
    error message); True only where those checks would pass too."""
    if len(set(req_ids)) != len(req_ids) or not all(isinstance(p, SamplingParams) for p in params):
        return False
    for prev in prev_tokens:
        if type(prev) is not list:
            return False
        if prev and not ({int}.issuperset(map(type, prev)) and 0 <= min(prev) and max(prev) < vocab):
            return False
    return True
