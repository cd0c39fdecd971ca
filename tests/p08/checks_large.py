"""Acceptance check I6.large: sample() at real vocabulary sizes (V = 50257, 151936), on peaked, flat and
head-and-tail rows whose nuclei hold hundreds to thousands of tokens. Draws are compared with the oracle by
rank bucket (ranks 0-7, 8-31, ... in the row's descending order), 6 standard deviations, fixed seeds."""
import math

import torch

from course import oracle
from course.grader.checks import Fail, check, params_text
from tests.p08 import diagnose
from tests.p08.checks_contract import WRONG_ORDERS, kept_set_in_order
from tests.p08.draws import draws_of
from tests.p08.rows import head_and_tail, top_p_keeping, zipf_logits

BOTH = ("p08", "p08-fast")
EDGES = (8, 32, 128, 512, 2048, 8192)


def rank_buckets(probs, order):
    """[(first rank, last rank + 1)] over the kept ranks of `order`, cut at EDGES."""
    kept = sum(1 for i in order if probs[i] > 0)
    cuts = [0] + [e for e in EDGES if e < kept] + [kept]
    return list(zip(cuts[:-1], cuts[1:]))


def cases(ctx):
    """(label, row [V], params kwargs, draws): each row's kept set is clear of ties and near-ties."""
    g = torch.Generator().manual_seed(91)
    peaked = zipf_logits(g, 1, 50257)[0]
    wide = head_and_tail(g, 50257, 700)
    flat = torch.randn(50257, generator=g) * 0.3
    huge = head_and_tail(g, 151936, 500)
    return [
        ("V=50257, peaked (Zipf), seed 004's knobs", peaked, dict(top_k=40, top_p=0.9), 200),
        ("V=50257, top-p only, a nucleus of 520 tokens", wide, dict(top_p=top_p_keeping(wide, 520)), 200),
        ("V=50257, flat row, top-p only (thousands kept)", flat, dict(top_p=0.35), 150),
        ("V=50257, peaked, top_k=3000 and top_p=0.97", peaked, dict(top_k=3000, top_p=0.97, temperature=1.3), 150),
        ("V=151936, top-p only, T=0.8, a nucleus of 380 tokens", huge,
         dict(temperature=0.8, top_p=top_p_keeping(huge, 380, temperature=0.8)), 100),
    ]


@check("I6.large", "真实词表大小：V = 50257 与 151936，几百上千个 token 的 nucleus",
       "real vocabulary sizes: V = 50257 and 151936, nuclei of hundreds to thousands of tokens",
       hint=("p08", 2, "s5"), problems=BOTH)
def i6_large_vocabularies(ctx):
    for n, (label, row, kwargs, draws) in enumerate(cases(ctx)):
        values = row.tolist()
        params = ctx.params(**kwargs)
        probs = oracle.probs_for(values, params)
        order = oracle.descending_order(values)
        rank = {token: r for r, token in enumerate(order)}
        tokens = draws_of(ctx, row, draws, 20_000 + 1000 * n, chunk=100, **kwargs)
        call = f"{label}: {draws} draws of {ctx.sampler_name}.sample(..., {params_text(params)})"
        unsure = oracle.ambiguous_tokens(values, params)               # a hair from the top-p cut: either way is right
        outside = [t for t in tokens if probs[t] == 0.0 and t not in unsure]
        kept = sum(p > 0 for p in probs)
        if outside:
            diagnose.earlier_step_first(ctx, f"{call} drew token {outside[0]} (rank {rank[outside[0]]})",
                                        [(values, params, [])] if len(values) <= 60_000 else [], stream=True, filters=True)
            fits = [ctx.t(*label) for steps, label in WRONG_ORDERS
                    if set(tokens) <= kept_set_in_order(values, params, [], steps)]
            why = ctx.t("被 top-k/top-p 删掉的 token 不能被抽到", "a token removed by top-k/top-p must never be drawn") + (
                ctx.t(f"；这些抽样落在这种顺序的保留集合里：{' / '.join(fits)}（见 S1-5）",
                      f"; the draws fall inside the kept set of: {' / '.join(fits)} (see S1-5)") if fits else "")
            raise Fail(f"{call} drew token {outside[0]} (rank {rank[outside[0]]}), which the filters remove: "
                       f"only the top {kept} ranks are kept", why, where=f"{ctx.sampler_name}.sample")
        deepest = max(rank[t] for t in tokens)
        below = sum(probs[order[r]] for r in range(deepest + 1))       # mass of ranks 0..deepest
        if below < 1 and draws * -math.log(below) > 20.7:            # P(no draw deeper) = below ** draws < 1e-9
            observed = f"{call}: the deepest rank drawn is {deepest}, but ranks {deepest + 1}-{kept - 1} hold {1 - below:.0%} of the mass"
            diagnose.earlier_step_first(ctx, observed, [(values, params, [])], stream=True, filters=True)
            raise Fail(observed, ctx.t(f"{draws} 次都没抽到更深的 token（正确的采样器出现这种情况的概率 < 1e-9）：nucleus 被截断了（固定大小的窗口？）",
                                       f"not one of {draws} draws went deeper (a correct sampler does that with probability "
                                       f"< 1e-9): the nucleus is cut short (a fixed-size window?)"),
                       where=f"{ctx.sampler_name}.sample")
        buckets = rank_buckets(probs, order)
        expected = [sum(probs[order[r]] for r in range(a, b)) for a, b in buckets]
        counts = [sum(a <= rank[t] < b for t in tokens) for a, b in buckets]
        bad = oracle.sigma_violations(counts, expected, draws)
        if not bad:
            continue
        cell, seen, want, allowed = bad[0]
        a, b = buckets[cell]
        observed = (f"{call}: ranks {a}-{b - 1} drawn {seen:.3f} of the time, expected {want:.3f} (allowed ±{allowed:.3f}); "
                    f"{kept} tokens are kept")
        diagnose.earlier_step_first(ctx, observed, [(values, params, [])], stream=True, filters=True)
        raise Fail(observed, where=f"{ctx.sampler_name}.sample")
