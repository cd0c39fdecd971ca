"""Acceptance check F6 of p08-fast: FastSampler.sample() draws from the distribution its own
filtered_probs() reports, at real vocabulary sizes, so a right filtered_probs cannot hide a truncated or
otherwise different sample(). Rank buckets of filtered_probs, 6 standard deviations, fixed seeds."""
import math

import torch

from course.grader.checks import Fail, check
from tests.p08.context import params_text
from tests.p08.rows import head_and_tail, top_p_keeping, zipf_logits
from tests.p08_fast.checks_fast import fast_probs

EDGES = (4, 16, 64, 256, 1024, 4096)


def draw_cases(ctx):
    g = torch.Generator().manual_seed(23)
    peaked, wide, flat = zipf_logits(g, 1, 50257)[0], head_and_tail(g, 50257, 700), torch.randn(50257, generator=g) * 0.3
    return [(ctx.t("V=50257，尖峰，top_k=40，top_p=0.9", "V=50257, peaked, top_k=40, top_p=0.9"), peaked, dict(top_k=40, top_p=0.9)),
            (ctx.t("V=50257，只有 top-p，核心 450 个 token", "V=50257, top-p only, a nucleus of 450 tokens"), wide,
             dict(top_p=top_p_keeping(wide, 450))),
            (ctx.t("V=50257，平坦，只有 top-p（保留几千个）", "V=50257, flat, top-p only (thousands kept)"), flat,
             dict(top_p=0.3, temperature=0.9)),
            (ctx.t("V=50257，尖峰，top_k=1500", "V=50257, peaked, top_k=1500"), peaked, dict(top_k=1500, temperature=1.2))]


@check("F6", "sample() 的抽样符合你自己的 filtered_probs()（真实词表大小）",
       "sample() draws from your own filtered_probs() (real vocabulary sizes)", hint=("p08-fast", 2, "s5"))
def f6_sample_matches_own_filtered_probs(ctx):
    draws, chunk = 400, 100
    for n, (label, row, kwargs) in enumerate(draw_cases(ctx)):
        params = [ctx.params(seed=30_000 + 1000 * n + i, **kwargs) for i in range(chunk)]
        logits = row.to(ctx.device)[None].expand(chunk, -1).clone()                             # [chunk, V]
        probs = fast_probs(ctx, ctx.sampler(), logits[:1], params[:1], [[]])[0].double()        # [V] yours
        order = torch.argsort(probs, descending=True, stable=True)                              # [V]
        rank = torch.empty_like(order)
        rank[order] = torch.arange(len(order))
        tokens = []
        for start in range(0, draws, chunk):
            batch_params = [ctx.params(seed=30_000 + 1000 * n + start + i, **kwargs) for i in range(chunk)]
            tokens += ctx.sample(ctx.sampler(), logits, [f"r{start + i}" for i in range(chunk)], batch_params,
                                 [[] for _ in range(chunk)])
        call = ctx.t(f"{label}：FastSampler.sample(..., {params_text(params[0])}) 抽 {draws} 次",
                     f"{label}: {draws} draws of FastSampler.sample(..., {params_text(params[0])})")
        zero = [t for t in tokens if probs[t] == 0]
        if zero:
            raise Fail(ctx.t(f"{call}，抽到了 token {zero[0]}，而你的 filtered_probs 给它的概率是 0",
                             f"{call} drew token {zero[0]}, to which your filtered_probs gives probability 0"),
                       ctx.t("sample() 和 filtered_probs() 要用同一个过滤结果", "sample() and filtered_probs() must use the same filtering"),
                       where="FastSampler.sample")
        kept = int((probs > 0).sum())
        deepest = max(int(rank[t]) for t in tokens)
        below = float(probs[order[:deepest + 1]].sum())
        if below < 1 and draws * -math.log(below) > 20.7:                    # P(no draw deeper) < 1e-9
            raise Fail(ctx.t(f"{call}：抽到的最深排名是 {deepest}，而你的 filtered_probs 把 {1 - below:.0%} 的质量放在排名 "
                             f"{deepest + 1}-{kept - 1} 上",
                             f"{call}: the deepest rank drawn is {deepest}, but your filtered_probs puts {1 - below:.0%} of the "
                             f"mass on ranks {deepest + 1}-{kept - 1}"),
                       ctx.t("sample() 没有抽到 filtered_probs 保留的深处 token：抽样时的窗口被截断了？",
                             "sample() never reaches tokens your filtered_probs keeps: is the window cut short when drawing?"),
                       where="FastSampler.sample")
        cuts = [0] + [e for e in EDGES if e < kept] + [kept]
        for a, b in zip(cuts[:-1], cuts[1:]):
            p = float(probs[order[a:b]].sum())
            seen = sum(a <= int(rank[t]) < b for t in tokens) / draws
            allowed = 6 * math.sqrt(max(p * (1 - p), 1e-12) / draws) + 1 / draws
            if abs(seen - p) > allowed:
                raise Fail(ctx.t(f"{call}：排名 {a}-{b - 1} 被抽到的比例是 {seen:.3f}，你的 filtered_probs 说 {p:.3f}"
                                 f"（允许 ±{allowed:.3f}，6 个标准差）",
                                 f"{call}: ranks {a}-{b - 1} drawn {seen:.3f} of the time, your filtered_probs says {p:.3f} "
                                 f"(allowed ±{allowed:.3f}, 6 standard deviations)"),
                           ctx.t("sample() 抽样用的分布和 filtered_probs() 报告的不一样", "sample() draws from another "
                                 "distribution than the one filtered_probs() reports"), where="FastSampler.sample")
