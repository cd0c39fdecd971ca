"""Acceptance checks I1-I6: the invariants of the seed page, property-based (any correct sampler passes)."""
import copy

import torch

from course import drive, oracle
from course.checks import Fail, check, fmt_vec, params_text
from tests.p08.checks_examples import E3_ROW, LOG_PROBS, expect_distribution

BOTH = ("p08", "p08-fast")


def sample_fn(ctx):
    return lambda sampler, logits, ids, params, prev: ctx.sample(sampler, logits, ids, params, prev)


def peer_params(ctx):
    """A random peer: seeded or not, greedy or sampled, with or without filters and penalty."""
    def make(rng):
        kind = rng.randrange(4)
        if kind == 0:
            return ctx.params()
        if kind == 1:
            return ctx.params(temperature=0.0, repetition_penalty=rng.choice([1.0, 1.3]))
        return ctx.params(seed=rng.randrange(10_000), temperature=rng.choice([0.5, 1.0, 1.6]),
                          top_k=rng.choice([-1, 1, 3, 20, 100]), top_p=rng.choice([1.0, 0.5, 0.9]),
                          repetition_penalty=rng.choice([1.0, 1.2]))
    return make


# ---- I1 ----------------------------------------------------------------------------------------------
@check("I1", "批不变：batch 乱序、同伴进出、换参数，结果与单独运行逐个相同",
       "batch invariance under shuffled, changing peers", hint=("p08", 1, "q7"), problems=BOTH)
def i1_batch_invariance_under_shuffled_peers(ctx):
    vocab, steps = 48, 12
    P = ctx.params
    targets = [("t0", P(temperature=0.8, top_k=6, seed=11), 1), ("t1", P(temperature=1.3, top_p=0.8, seed=12), 2),
               ("t2", P(repetition_penalty=1.4, seed=13), 3), ("t3", P(temperature=0.0, seed=14), 4),
               ("t4", P(seed=123), 5), ("t5", P(seed=123, top_k=10, top_p=0.9), 6)]
    scenarios = [  # smallest first, so the report shows the smallest failing input
        ("one unseeded peer", targets[:1], drive.Traffic(lambda rng: P(), max_peers=1, join=1.0, leave=0.0), 4),
        ("one seeded peer", targets[:1], drive.Traffic(lambda rng: P(seed=11), max_peers=1, join=1.0, leave=0.0), 4),
        ("two requests with the same seed", [targets[4], ("t4b", P(seed=123), 5)], drive.Traffic(lambda rng: P(), 0), 4),
        ("peers that join, leave and change", targets, drive.Traffic(peer_params(ctx)), steps),
        ("joining a sampler that has served others for 5 steps", targets[:3], drive.Traffic(peer_params(ctx)), 6),
        ("targets that sit some steps out (not scheduled) and come back", targets[:4],
         drive.Traffic(peer_params(ctx), sit_out=0.4), 8),
    ]
    for name, group, traffic, n in scenarios:
        log, warmup = [], 5 if name.startswith("joining") else 0
        together = drive.mixed(ctx.sampler, sample_fn(ctx), group, n, vocab, ctx.device, traffic, seed=8, log=log,
                               warmup=warmup)
        for req_id, params, row_seed in group:
            alone = drive.solo(ctx.sampler, sample_fn(ctx), req_id, params, row_seed, n, vocab, ctx.device)
            if together[req_id] != alone:
                step = next(i for i, (a, b) in enumerate(zip(alone, together[req_id])) if a != b)
                raise Fail(f"request {req_id!r} ({params_text(params)}), scenario '{name}': alone -> {alone}",
                           f"in shuffled batches -> {together[req_id]}; first difference at its draw {step}, "
                           f"batch {[ids for _, ids in log if req_id in ids][step]}",
                           ctx.t("带 seed 的请求只能消费它自己的 generator：不能整批共用一个、不能按 seed 共用、不能对 [B, V] 调一次 multinomial",
                                 "a seeded request may only draw from its own generator: not one for the batch, not one per seed, "
                                 "not one multinomial over [B, V]"),
                           where=f"{ctx.sampler_name}.sample")


# ---- I2 ----------------------------------------------------------------------------------------------
@check("I2", "无副作用：调用后输入逐位不变", "no side effects on inputs", hint=("p08", 2, "traps"), problems=BOTH)
def i2_inputs_never_modified(ctx):
    g = torch.Generator().manual_seed(2)
    for dtype in (torch.float32, torch.bfloat16):
        logits = (torch.randn(3, 16, generator=g) * 2).to(device=ctx.device, dtype=dtype)
        before = logits.clone()
        prev = [[1, 2, 2], [], [5, 0]]
        prev_before, ids = copy.deepcopy(prev), ["x", "y", "z"]
        params = [ctx.params(repetition_penalty=1.5, temperature=0.7, top_k=5, top_p=0.8, seed=1),
                  ctx.params(temperature=0.0, repetition_penalty=2.0), ctx.params(repetition_penalty=1.3, seed=2)]
        ctx.sample(ctx.sampler(), logits, ids, params, prev)
        if not torch.equal(logits, before):
            row, col = (logits != before).nonzero()[0].tolist()
            raise Fail(f"called {ctx.sampler_name}.sample(logits [3, 16] {str(dtype)[6:]}, ...) changed logits[{row}, {col}]: "
                       f"{before[row, col].item():.4g} -> {logits[row, col].item():.4g}",
                       ctx.t("期望：调用方的 logits 不变（logits[i].float() 在 fp32 时不复制，原地改它就改了调用方的张量）",
                             "expected the caller's logits untouched (logits[i].float() does not copy an fp32 row: editing it in place edits the caller's tensor)"),
                       where=f"{ctx.sampler_name}.sample")
        if prev != prev_before or ids != ["x", "y", "z"]:
            raise Fail(f"called {ctx.sampler_name}.sample(..., prev_tokens={prev_before}) -> prev_tokens is now {prev}, req_ids {ids}",
                       where=f"{ctx.sampler_name}.sample")
    if not ctx.has_functions:
        return
    row = torch.tensor([0.3, -1.2, 2.0, 0.7, -0.1], device=ctx.device)
    for name, args in (("apply_repetition_penalty", ([0, 1, 1], 1.5)), ("apply_top_k", (2,)), ("apply_top_p", (0.5,))):
        before = row.clone()
        ctx.vector(name, row, *args)
        if not torch.equal(row, before):
            raise Fail(f"called {name}({fmt_vec(before)}, {', '.join(map(str, args))}): the input is now {fmt_vec(row)}",
                       ctx.t("期望：返回新张量，输入不变", "expected a new tensor back and the input unchanged"), where=name)


# ---- I3 ----------------------------------------------------------------------------------------------
@check("I3", "等价于 greedy：T<1e-5、top_k=1、极小 top_p", "greedy equivalents: T < 1e-5, top_k = 1, tiny top_p",
       hint=("p08", 1, "q3"), problems=BOTH)
def i3_greedy_equivalents(ctx):
    g = torch.Generator().manual_seed(3)
    logits = (torch.randn(4, 40, generator=g) * 3).to(ctx.device)                  # [4, 40] distinct values
    argmax = logits.argmax(-1).tolist()
    settings = [(dict(temperature=0.0), ("p08", 1, "q3")), (dict(temperature=1e-6), ("p08", 1, "q3")),
                (dict(top_k=1), ("p08", 1, "q5")), (dict(top_k=1, temperature=0.3), ("p08", 1, "q5")),
                (dict(top_p=1e-9), ("p08", 1, "q4")), (dict(top_p=1e-4, temperature=2.0), ("p08", 1, "q4"))]
    for kwargs, hint in settings:
        for seeded in (True, False):
            sampler = ctx.sampler()
            params = [ctx.params(seed=40 + i if seeded else None, **kwargs) for i in range(4)]
            for step in range(5):
                got = ctx.sample(sampler, logits, ["a", "b", "c", "d"], params, [[]] * 4)
                if got != argmax:
                    raise Fail(f"called {ctx.sampler_name}.sample(logits [4, 40], {params_text(params[0])}) at step {step} "
                               f"-> {got}, expected the argmax of each row {argmax}", hint=hint,
                               where=f"{ctx.sampler_name}.sample")


# ---- I4 ----------------------------------------------------------------------------------------------
INF = float("-inf")


@check("I4", "保留集合非空，没有 NaN（极端参数与数值）", "kept set never empty, no NaN (extreme params and values)",
       hint=("p08", 1, "q4"), problems=BOTH)
def i4_kept_set_never_empty(ctx):
    cases = [  # row, params, dtype, allowed tokens
        ([0.0] * 8, dict(top_p=1e-9), torch.float32, set(range(8))),
        ([0.0] * 8, dict(top_k=1, seed=3), torch.float32, set(range(8))),
        ([INF, INF, 2.0, INF], dict(top_k=2, top_p=0.5, seed=4), torch.float32, {2}),
        ([INF, 1.0, INF, 1.0], dict(top_k=3, seed=5), torch.float32, {1, 3}),
        ([1e30, -1e30, 5e29, 0.0], dict(top_p=0.9, seed=6), torch.float32, {0}),
        ([80.0, 79.0, -50.0, 0.0], dict(temperature=1e-4, seed=7), torch.float32, {0}),
        ([3e38, 2.9e38, -3e38, 0.0], dict(temperature=2.0, top_k=2, seed=8), torch.float32, {0}),
        ([65000.0, 64000.0, -65000.0, 0.0], dict(temperature=0.5, top_p=0.9, seed=9), torch.float16, {0}),
        ([0.0] * 8, dict(top_k=1, top_p=1e-9, temperature=1e-4, seed=10), torch.bfloat16, set(range(8))),
    ]
    for row, kwargs, dtype, allowed in cases:
        params = ctx.params(**kwargs)
        logits = ctx.tensor([row], dtype=dtype)
        sampler = ctx.sampler()
        for step in range(3):
            got = ctx.sample(sampler, logits, ["r"], [params], [[]])
            if got[0] not in allowed:
                raise Fail(f"called {ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}] {str(dtype)[6:]}, {params_text(params)}) "
                           f"-> token {got[0]}, expected one of {sorted(allowed)}", where=f"{ctx.sampler_name}.sample")
    if ctx.has_functions:
        flat = ctx.tensor([0.5] * 6)
        for name, arg in (("apply_top_p", 1e-9), ("apply_top_k", 1)):
            out = ctx.vector(name, flat, arg)
            kept = [v for v in out.tolist() if v != INF]
            if not kept or any(v != v for v in kept):
                raise Fail(f"called {name}({fmt_vec(flat)}, {arg}) -> {fmt_vec(out)}",
                           ctx.t("期望：至少保留一个 token，且没有 NaN", "expected at least one kept token and no NaN"), where=name)


# ---- I5 ----------------------------------------------------------------------------------------------
@check("I5", "随机流连续；free 之后重置", "stream continuity, and reset after free", hint=("p08", 1, "q6"), problems=BOTH)
def i5_stream_continuity_and_reset(ctx):
    flat = ctx.tensor([[0.0] * 64])
    method = f"{ctx.sampler_name}.sample"

    def draws(sampler, req_id, seed, n):
        return [ctx.sample(sampler, flat, [req_id], [ctx.params(seed=seed)], [[]])[0] for _ in range(n)]

    sampler = ctx.sampler()
    first = draws(sampler, "q", 21, 8)
    if len(set(first)) == 1:
        raise Fail(f"8 draws of request 'q' (seed=21) over 64 equal logits -> {first}",
                   ctx.t("每一步都抽到同一个 token：generator 是不是每步重新 manual_seed 了？要跨 step 复用",
                         "every step drew the same token: is the generator re-seeded every step? keep it across steps"),
                   where=method)
    again = draws(ctx.sampler(), "q", 21, 8)
    if again != first:
        raise Fail(f"a second fresh {ctx.sampler_name}, request 'q' (seed=21), 8 draws -> {again}, expected {first}",
                   ctx.t("同一个 seed 在新的 sampler 里要重放同样的随机流", "the same seed in a fresh sampler must replay the same stream"),
                   where=method)
    sampler.free("q")
    sampler.free("never-seen")                                          # unknown id: a no-op
    replay = draws(sampler, "q", 21, 8)
    if replay != first:
        raise Fail(f"8 draws, free('q'), 8 draws again with seed=21 -> {replay}, expected the first 8 again {first}",
                   ctx.t("free 之后要删除 generator，同名请求重新开始", "free must drop the generator so the id starts afresh"),
                   where=f"{ctx.sampler_name}.free")
    other_id = draws(ctx.sampler(), "another-id", 21, 8)
    if other_id != first:
        raise Fail(f"request 'another-id' with seed=21 -> {other_id}, expected the same stream as 'q' with seed=21 {first}",
                   ctx.t("随机流只由 seed 决定，与 req_id 无关", "the stream is decided by the seed alone, not by the req_id"),
                   where=method)
    sampler.free("q")
    other_seed = draws(sampler, "q", 22, 8)
    expected = draws(ctx.sampler(), "q", 22, 8)
    if other_seed == first:
        raise Fail(f"'q' with seed=22 -> {other_seed}, the very stream of seed=21",
                   ctx.t("不同的 seed 要给出不同的随机流：generator 用 manual_seed(seed) 初始化", "different seeds must give different "
                         "streams: initialise the generator with manual_seed(seed)"), where=method)
    if other_seed != expected:
        raise Fail(f"free('q'), then 'q' reused with seed=22 -> {other_seed}, expected a fresh seed-22 stream {expected}",
                   where=f"{ctx.sampler_name}.free")
    one, two = ctx.sampler(), ctx.sampler()
    interleaved = [(draws(one, "q", 21, 1)[0], draws(two, "q", 21, 1)[0]) for _ in range(8)]
    if [a for a, _ in interleaved] != first or [b for _, b in interleaved] != first:
        raise Fail(f"two {ctx.sampler_name} objects used in turns, each with 'q' (seed=21) -> {interleaved}",
                   ctx.t("两个 sampler 实例不能共享 generator（别把字典放在类属性或模块全局里）",
                         "two sampler objects must not share generators (no class-level or module-level dict)"),
                   where=method)


# ---- I6 ----------------------------------------------------------------------------------------------
@check("I6", "经验分布 ≈ 过滤后的分布（一个请求抽几千步）", "empirical distribution matches the filtered one",
       hint=("p08", 2, "s6"), problems=BOTH)
def i6_empirical_distribution(ctx):
    rows = [LOG_PROBS + [-3.0, -3.5], LOG_PROBS + [-3.0, -3.5], E3_ROW, E3_ROW]
    settings = [(dict(top_k=2, seed=61), []),
                (dict(temperature=2.0, top_k=3, top_p=0.45, seed=62), []),
                (dict(temperature=0.8, top_k=4, top_p=0.7, repetition_penalty=1.3, seed=63), [0, 5]),
                (dict(temperature=1.3, top_p=0.9), [])]
    params = [ctx.params(**kw) for kw, _ in settings]
    prev = [list(p) for _, p in settings]
    expected = [oracle.probs_for(row, p, pv) for row, p, pv in zip(rows, params, prev)]
    steps, sampler, ids = 2500, ctx.sampler(), ["k2", "mix", "pen", "free"]
    logits = ctx.tensor(rows)
    counts = [[0] * 6 for _ in rows]
    for _ in range(steps):
        for r, t in enumerate(ctx.sample(sampler, logits, ids, params, prev)):
            counts[r][t] += 1
    for r, (kw, pv) in enumerate(settings):
        if max(counts[r]) == steps and max(expected[r]) < 1:
            raise Fail(f"request {ids[r]!r} ({params_text(params[r])}): {steps} steps drew token "
                       f"{counts[r].index(steps)} every time, expected {fmt_vec(expected[r])}",
                       ctx.t("每一步都一样：generator 每步都重建了？", "the same token every step: is the generator rebuilt every step?"),
                       hint=("p08", 1, "q6"), where=f"{ctx.sampler_name}.sample")
        expect_distribution(ctx, f"request {ids[r]!r} ({params_text(params[r])}, prev_tokens={pv}) over {steps} steps",
                            counts[r], expected[r], steps, ("p08", 2, "s6"))

