"""Acceptance checks I6: draws follow the filtered distribution (6 standard deviations, fixed seeds), on the
seed page's rows (I6) and, in I6.large, sample() at real vocabulary sizes (V = 50257, 151936), on peaked, flat and
head-and-tail rows whose nuclei hold hundreds to thousands of tokens. Draws are compared with the oracle by
rank bucket (ranks 0-7, 8-31, ... in the row's descending order), 6 standard deviations, fixed seeds."""
import functools
import math
from types import SimpleNamespace

import torch

from course import oracle
from course.grader.checks import Fail, check, fmt_vec
from tests.p08.context import params_text
from tests.p08 import diagnose
from tests.p08.checks_contract import WRONG_ORDERS, kept_set_in_order
from tests.p08.checks_examples import E3_ROW, LOG_PROBS, expect_distribution
from tests.p08.draws import draws_of
from tests.p08.rows import head_and_tail, top_p_keeping, zipf_logits

EDGES = (8, 32, 128, 512, 2048, 8192)


def rank_buckets(probs, order):
    """[(first rank, last rank + 1)] over the kept ranks of `order`, cut at EDGES."""
    kept = sum(1 for i in order if probs[i] > 0)
    cuts = [0] + [e for e in EDGES if e < kept] + [kept]
    return list(zip(cuts[:-1], cuts[1:]))


LABELS_ZH = {  # the labels of cases() below, in Chinese
    "V=50257, peaked (Zipf), seed 004's knobs": "V=50257，尖峰行（Zipf），seed 004 的参数",
    "V=50257, top-p only, a nucleus of 520 tokens": "V=50257，只有 top-p，nucleus 有 520 个 token",
    "V=50257, flat row, top-p only (thousands kept)": "V=50257，平坦的行，只有 top-p（保留几千个）",
    "V=50257, the same flat row, a nucleus of 30 tokens (its 100 % is the whole row's mass)":
        "V=50257，同一平坦行，nucleus 30 个 token（100 % 是整行的质量）",
    "V=50257, peaked, top_k=3000 and top_p=0.97": "V=50257，尖峰行，top_k=3000 与 top_p=0.97",
    "V=151936, top-p only, T=0.8, a nucleus of 380 tokens": "V=151936，只有 top-p，T=0.8，nucleus 有 380 个 token",
}


@functools.lru_cache(maxsize=None)      # the same for every file graded in one process (the self-tests grade many)
def cases():
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
        ("V=50257, the same flat row, a nucleus of 30 tokens (its 100 % is the whole row's mass)", flat,
         dict(top_p=top_p_keeping(flat, 30)), 100),
        ("V=50257, peaked, top_k=3000 and top_p=0.97", peaked, dict(top_k=3000, top_p=0.97, temperature=1.3), 150),
        ("V=151936, top-p only, T=0.8, a nucleus of 380 tokens", huge,
         dict(temperature=0.8, top_p=top_p_keeping(huge, 380, temperature=0.8)), 100),
    ]


@functools.lru_cache(maxsize=None)      # pure Python over 50257-151936 values: once a process for the same knobs
def oracle_view(n, temperature, top_k, top_p, repetition_penalty):
    """What the oracle says of cases()[n] under these knobs: (values, probs, descending order, rank of each token,
    tokens a hair from the top-p cut, kept count)."""
    values = tuple(cases()[n][1].tolist())
    knobs = SimpleNamespace(temperature=temperature, top_k=top_k, top_p=top_p, repetition_penalty=repetition_penalty)
    probs = oracle.probs_for(values, knobs)
    order = oracle.descending_order(values)
    rank = {token: r for r, token in enumerate(order)}
    return values, probs, order, rank, oracle.ambiguous_tokens(values, knobs), sum(p > 0 for p in probs)


@check("I6.large", "真实词表大小：V = 50257 与 151936，几百上千个 token 的 nucleus",
       "real vocabulary sizes: V = 50257 and 151936, nuclei of hundreds to thousands of tokens",
       hint=("p08", 2, "s5"))
def i6_large_vocabularies(ctx):
    for n, (label, row, kwargs, draws) in enumerate(cases()):
        params = ctx.params(**kwargs)
        values, probs, order, rank, unsure, kept = oracle_view(n, params.temperature, params.top_k, params.top_p,
                                                               params.repetition_penalty)
        tokens = draws_of(ctx, row, draws, 20_000 + 1000 * n, chunk=100, **kwargs)
        call = ctx.t(f"{LABELS_ZH.get(label, label)}：{ctx.sampler_name}.sample(..., {params_text(params)}) 抽 {draws} 次",
                     f"{label}: {draws} draws of {ctx.sampler_name}.sample(..., {params_text(params)})")
        drew = ctx.t(f"{call} 抽到了 token {{}}（第 {{}} 名）", f"{call} drew token {{}} (rank {{}})")
        outside = [t for t in tokens if probs[t] == 0.0 and t not in unsure]   # unsure: a hair from the top-p cut
        if outside:
            diagnose.earlier_step_first(ctx, drew.format(outside[0], rank[outside[0]]),
                                        [(values, params, [])] if len(values) <= 60_000 else [], stream=True, filters=True)
            fits = [ctx.t(*label) for steps, label in WRONG_ORDERS
                    if set(tokens) <= kept_set_in_order(values, params, [], steps)]
            why = ctx.t("被 top-k/top-p 删掉的 token 不能被抽到", "a token removed by top-k/top-p must never be drawn") + (
                ctx.t(f"；这些抽样落在这种顺序的保留集合里：{' / '.join(fits)}（见 S1-5）",
                      f"; the draws fall inside the kept set of: {' / '.join(fits)} (see S1-5)") if fits else "")
            raise Fail(drew.format(outside[0], rank[outside[0]]) + ctx.t(f"，而过滤会删掉它：只保留前 {kept} 名",
                                                                         f", which the filters remove: only the top {kept} ranks "
                                                                         f"are kept"), why, where=f"{ctx.sampler_name}.sample")
        deepest = max(rank[t] for t in tokens)
        below = sum(probs[order[r]] for r in range(deepest + 1))       # mass of ranks 0..deepest
        if below < 1 and draws * -math.log(below) > 20.7:            # P(no draw deeper) = below ** draws < 1e-9
            observed = ctx.t(f"{call}：抽到的最深的名次是 {deepest}，但第 {deepest + 1}-{kept - 1} 名占了 {1 - below:.0%} 的质量",
                             f"{call}: the deepest rank drawn is {deepest}, but ranks {deepest + 1}-{kept - 1} hold "
                             f"{1 - below:.0%} of the mass")
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
        observed = ctx.t(f"{call}：第 {a}-{b - 1} 名被抽到的比例是 {seen:.3f}，期望 {want:.3f}（允许 ±{allowed:.3f}）；保留了 {kept} 个 token",
                         f"{call}: ranks {a}-{b - 1} drawn {seen:.3f} of the time, expected {want:.3f} (allowed "
                         f"±{allowed:.3f}); {kept} tokens are kept")
        diagnose.earlier_step_first(ctx, observed, [(values, params, [])], stream=True, filters=True)
        raise Fail(observed, where=f"{ctx.sampler_name}.sample")


# ---- I6 ----------------------------------------------------------------------------------------------
@check("I6", "经验分布 ≈ 过滤后的分布（一个请求抽几千步）", "empirical distribution matches the filtered one",
       hint=("p08", 2, "s6"))
def i6_empirical_distribution(ctx):
    rows = [LOG_PROBS + [-3.0, -3.5], LOG_PROBS + [-3.0, -3.5], E3_ROW, E3_ROW, TIES_ROW, EQUAL_ROW]
    settings = [(dict(top_k=2, seed=61), []),
                (dict(temperature=2.0, top_k=3, top_p=0.45, seed=62), []),
                (dict(temperature=0.8, top_k=4, top_p=0.7, repetition_penalty=1.3, seed=63), [0, 5]),
                (dict(temperature=1.3, top_p=0.9), []),
                (dict(top_k=2, seed=64), []),                        # tokens 1 and 2 tie with the 2nd largest: 3 kept
                (dict(top_p=0.5, seed=0), [])]                       # 4 equal tokens, 0.25 each: exactly 2 kept
    params = [ctx.params(**kw) for kw, _ in settings]
    prev = [list(p) for _, p in settings]
    expected = [oracle.probs_for(row, p, pv) for row, p, pv in zip(rows, params, prev)]
    steps, sampler, ids = 2500, ctx.sampler(), ["k2", "mix", "pen", "free", "ties", "equal"]
    logits = ctx.tensor(rows)
    given = logits.clone()
    counts = [[0] * 6 for _ in rows]
    for _ in range(steps):
        for r, t in enumerate(ctx.sample(sampler, logits, ids, params, prev)):
            counts[r][t] += 1
    if not torch.equal(logits, given):                               # the same tensor every step, like an engine's
        changed = (logits != given).nonzero()[0].tolist()
        ctx.changed_inputs = ctx.changed_inputs or [f"logits{changed} went from {given[tuple(changed)].item():.4g} to "
                                                    f"{logits[tuple(changed)].item():.4g}"]
        diagnose.earlier_step_first(ctx, ctx.t(f"在同一个 logits 张量上调用 {ctx.sampler_name}.sample {steps} 步",
                                               f"{steps} steps of {ctx.sampler_name}.sample on one logits tensor"))
    for r, (kw, pv) in enumerate(settings):
        label = ctx.t(f"请求 {ids[r]!r}（{params_text(params[r])}, prev_tokens={pv}）跑 {steps} 步",
                      f"request {ids[r]!r} ({params_text(params[r])}, prev_tokens={pv}) over {steps} steps")
        if max(counts[r]) == steps and max(expected[r]) < 1 and kw.get("seed") is None:
            observed = ctx.t(f"{label}：每次都抽到 token {counts[r].index(steps)}，期望 {fmt_vec(expected[r])}",
                             f"{label}: drew token {counts[r].index(steps)} every time, expected {fmt_vec(expected[r])}")
            diagnose.earlier_step_first(ctx, observed, [(rows[r], params[r], pv)], stream=True)
            shared = ctx.sampler()                                   # seeded streams move: is the unseeded one stuck?
            flat = [ctx.sample(shared, ctx.tensor([[0.0] * 64]), ["u"], [ctx.params()], [[]])[0] for _ in range(8)]
            if len(set(flat)) == 1:
                raise Fail(observed, ctx.t(f"一个没有 seed 的请求在 64 个相等的 logits 上抽 8 次 -> {flat}",
                                           f"8 draws of an unseeded request over 64 equal logits -> {flat}"),
                           ctx.t("没有 seed 的请求每一步都抽到同一个 token：共享的 generator 每步都重建了，要在 sampler 里保留一个",
                                 "an unseeded request draws the same token every step: the shared generator is rebuilt every "
                                 "step; keep one in the sampler"), hint=("p08", 1, "q6"), where=f"{ctx.sampler_name}.sample")
        if ids[r] == "equal":                                          # which 2 of the 4 is a tie rule: any 2 will do
            drawn = sorted(i for i, c in enumerate(counts[r]) if c)
            if len(drawn) != 2:
                observed = ctx.t(f"{label}，行 [{fmt_vec(rows[r])[1:-1]}]：抽到 tokens {drawn}，期望 4 个相等 token 中恰好 2 个",
                                 f"{label} over [{fmt_vec(rows[r])[1:-1]}]: drew tokens {drawn}, expected exactly 2 of the 4 "
                                 f"equal ones")
                diagnose.earlier_step_first(ctx, observed, [(rows[r], params[r], pv)], stream=True, filters=True)
                raise Fail(observed, ctx.t("第 3 个 token 之前的质量恰好是 0.5 = top_p：它要被删掉（mass_before >= top_p，不是 >）",
                                           "the mass before the 3rd token is exactly 0.5 = top_p: it is removed (mass before >= "
                                           "top_p, not >)"), hint=("p08", 1, "q4"), where=f"{ctx.sampler_name}.sample")
            expected[r] = [0.5 if i in drawn else 0.0 for i in range(6)]
        expect_distribution(ctx, label, counts[r], expected[r], steps, ("p08", 2, "s6"), case=(rows[r], params[r], pv))


TIES_ROW = [2.0, 1.0, 1.0, 0.0, -1.0, -1.0]
EQUAL_ROW = [0.7, 0.7, 0.7, 0.7, float("-inf"), float("-inf")]
