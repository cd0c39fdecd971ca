"""Drawing helpers of the checks and the diagnosis: many seeded draws of one row, counts, fit in standard
deviations, and "does sample() run on this input at all"."""
import math

from course.grader.checks import RAISE_AS_IS


def draws_of(ctx, row, n, first_seed, chunk=100, prev=(), **kwargs):
    """n tokens for `row` [V]: n requests with seeds first_seed.. (one draw each, history `prev`), `chunk` rows per call."""
    tokens = []
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        logits = row.to(ctx.device)[None].expand(size, -1).clone()                        # [b, V]
        ids = [f"r{start + i}" for i in range(size)]
        params = [ctx.params(seed=first_seed + start + i, **kwargs) for i in range(size)]
        tokens += ctx.sample(ctx.sampler(), logits, ids, params, [list(prev) for _ in ids])
    return tokens


def worst_z(counts, probs, draws) -> float:
    """The largest |observed - expected| of any cell, in standard deviations (a drawn zero-probability cell: inf)."""
    worst = 0.0
    for c, p in zip(counts, probs):
        if p == 0.0:
            worst = max(worst, float("inf") if c else 0.0)
        else:
            worst = max(worst, abs(c / draws - p) / math.sqrt(p * (1 - p) / draws))
    return worst


def counts_of(tokens, cells):
    out = [0] * cells
    for t in tokens:
        out[t] += 1
    return out


def runs(ctx, logits, **kwargs) -> bool:
    """Does sample() run without raising on these rows [B, V], each row seeded, with these params?"""
    try:
        ctx.sample(ctx.sampler(), logits, [f"p{i}" for i in range(len(logits))],
                   [ctx.params(seed=70 + i, **kwargs) for i in range(len(logits))], [[]] * len(logits))
    except RAISE_AS_IS:
        raise
    except Exception:  # noqa: BLE001 - a probe
        return False
    return True
