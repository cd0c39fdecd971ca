"""Acceptance checks I1-I6: the invariants of the seed page, property-based (any correct sampler passes)."""
import copy

import torch

from course import drive, oracle
from course.checks import Fail, check, fmt_vec, params_text
from course.loader import load_module
from tests.p08 import diagnose
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
        ("seed=0 beside unseeded peers", [("z0", P(seed=0, top_k=20), 7)],
         drive.Traffic(lambda rng: P(), max_peers=2, join=1.0, leave=0.0), 4),
        ("a peer row whose logits are near 120", targets[:2] + targets[4:5],
         drive.Traffic(lambda rng: P(seed=77, top_p=0.9), max_peers=1, join=1.0, leave=0.0, shift=120.0), 4),
        ("peers that join, leave and change", targets, drive.Traffic(peer_params(ctx)), steps),
        ("joining a sampler that has served others for 5 steps", targets[:3], drive.Traffic(peer_params(ctx)), 6),
        ("targets that sit some steps out (not scheduled) and come back", targets[:4],
         drive.Traffic(peer_params(ctx), sit_out=0.4), 8),
    ]
    for name, group, traffic, n in scenarios:
        mismatch = first_mismatch(ctx, group, traffic, n, vocab, warmup=5 if name.startswith("joining") else 0)
        if mismatch is None:
            continue
        lines, hint = mismatch, ("p08", 1, "q7")
        if name.startswith("seed=0") and first_mismatch(ctx, [("z1", P(seed=1, top_k=20), 7)], traffic, n, vocab) is None:
            why = ctx.t("同样的场景 seed=1 没问题，seed=0 就不行：0 也是一个 seed（`if not seed` / `if params.seed:` 把 0 当成了没有 seed，要写 `is None`）",
                        "the same scenario with seed=1 passes, with seed=0 it fails: 0 is a seed too (`if not seed` / "
                        "`if params.seed:` treat 0 as no seed; test `seed is None`)")
            hint = ("p08", 1, "q6")
        elif traffic.shift and first_mismatch(ctx, group, drive.Traffic(traffic.make_params, max_peers=1, join=1.0, leave=0.0),
                                              n, vocab) is None:
            why = ctx.t("同伴的 logits 在 0 附近时没问题，在 120 附近时就变了：有个 max 或 sum 是跨整个 batch 算的，要按行（dim=-1）",
                        "with the peer's logits near 0 it passes, near 120 it fails: a max or a sum is taken over the whole "
                        "batch; take it per row (dim=-1)")
            hint = ("p08", 2, "traps")
        elif leak := filter_leak(ctx, mismatch, vocab):
            why = ctx.t(f"{leak}：某一行的过滤/penalty 受到了同批其他行的影响（整批共用的 k、p、max，或历史混在一起），不是随机数的问题",
                        f"{leak}: one row's filtering or penalty depends on the other rows (a batch-wide k, p or max, or mixed "
                        f"histories), not a matter of random numbers")
            hint = ("p08", 2, "traps")
        else:
            why = ctx.t("带 seed 的请求只能消费它自己的 generator：不能整批共用一个、不能按 seed 共用、不能对 [B, V] 调一次 multinomial",
                        "a seeded request may only draw from its own generator: not one for the batch, not one per seed, "
                        "not one multinomial over [B, V]")
            unseeded_peer = name == "one unseeded peer"
            if unseeded_peer:
                why += ctx.t("（这里唯一的同伴没有 seed：没 seed 的请求用共享 generator，不能动到带 seed 的）",
                             " (the only peer here is unseeded: unseeded requests use the shared generator, never a seeded one's)")
        raise Fail(f"scenario '{name}': {lines[0]}", lines[1], why, hint=hint, where=f"{ctx.sampler_name}.sample")


def first_mismatch(ctx, group, traffic, steps, vocab, warmup=0):
    """None when every target draws the same tokens mixed as alone; else two lines saying where they differ.
    An exception inside the mixed run (e.g. NaN from a batch-wide max) counts as a mismatch."""
    log = []
    try:
        together = drive.mixed(ctx.sampler, sample_fn(ctx), group, steps, vocab, ctx.device, traffic, seed=8, log=log,
                               warmup=warmup)
    except Fail:
        raise
    except Exception as exc:  # noqa: BLE001 - a mismatch if the targets run alone without it, else the crash itself
        if isinstance(exc, NotImplementedError):
            raise
        for req_id, params, row_seed in group:
            drive.solo(ctx.sampler, sample_fn(ctx), req_id, params, row_seed, steps, vocab, ctx.device)
        return [f"in mixed batches {ctx.sampler_name}.sample raised {type(exc).__name__}: {str(exc)[:100]}",
                f"(batch of the failing step: {log[-1][1] if log else '?'})"]
    for req_id, params, row_seed in group:
        alone = drive.solo(ctx.sampler, sample_fn(ctx), req_id, params, row_seed, steps, vocab, ctx.device)
        if together[req_id] != alone:
            step = next(i for i, (a, b) in enumerate(zip(alone, together[req_id])) if a != b)
            return Mismatch([f"request {req_id!r} ({params_text(params)}) alone -> {alone}",
                             f"in shuffled batches -> {together[req_id]}; first difference at its draw {step}, "
                             f"batch {[ids for _, ids in log if req_id in ids][step]}"],
                            params, row_seed, alone[:step], together[req_id][step])
    return None


class Mismatch(list):
    """The two lines of a mismatch, plus what it takes to re-derive the row: params, row_seed, history, token."""

    def __init__(self, lines, params, row_seed, history, mixed_token):
        super().__init__(lines)
        self.params, self.row_seed, self.history, self.mixed_token = params, row_seed, history, mixed_token


def filter_leak(ctx, mismatch, vocab):
    """A sentence when the mixed run's token is one the row's own rule rules out (probability 0, or not the
    argmax of a greedy row): then the peers changed the filtering, not the randomness. Else None."""
    if not isinstance(mismatch, Mismatch):
        return None
    row = drive.row_for(mismatch.row_seed, len(mismatch.history), vocab).tolist()
    probs = oracle.probs_for(row, mismatch.params, mismatch.history)
    if probs[mismatch.mixed_token] == 0 and mismatch.mixed_token not in oracle.ambiguous_tokens(row, mismatch.params, mismatch.history):
        return ctx.t(f"在 batch 里这一行得到 token {mismatch.mixed_token}，而按它自己的参数这个 token 的概率是 0",
                     f"in the batch this row produced token {mismatch.mixed_token}, which its own params give probability 0")
    return None


# ---- I2 ----------------------------------------------------------------------------------------------
@check("I2", "无副作用：调用后输入逐位不变", "no side effects on inputs", hint=("p08", 2, "traps"), problems=BOTH)
def i2_inputs_never_modified(ctx):
    g = torch.Generator().manual_seed(2)
    P = ctx.params
    paths = [  # (params, history): every path a sampler may take, with and without a penalty
        (P(repetition_penalty=1.5, temperature=0.7, top_k=5, top_p=0.8, seed=1), [1, 2, 2]),
        (P(temperature=0.0, repetition_penalty=2.0), []), (P(repetition_penalty=1.3, seed=2), [5, 0]),
        (P(temperature=0.0), []), (P(temperature=0.7, seed=3), []), (P(temperature=0.7, top_k=4, seed=4), []),
        (P(temperature=1.3, top_p=0.6, seed=5), []), (P(temperature=0.5, top_k=3, top_p=0.7), []), (P(), []),
        (P(top_k=1), []), (P(temperature=1e-6, top_p=0.5), [3]), (P(repetition_penalty=0.7, top_k=6, seed=6), [4, 4]),
    ]
    for dtype in (torch.float32, torch.bfloat16):
        logits = (torch.randn(len(paths), 16, generator=g) * 2).to(device=ctx.device, dtype=dtype)
        batches = [list(range(len(paths)))] + [[i] for i in range(len(paths))]      # the whole batch, then each alone
        for rows in batches:
            part = logits[rows].clone() if len(rows) == 1 else logits
            before = part.clone()
            prev = [list(paths[i][1]) for i in rows]
            prev_before, ids = copy.deepcopy(prev), [f"x{i}" for i in rows]
            params = [paths[i][0] for i in rows]
            ctx.sample(ctx.sampler(), part, ids, params, prev)
            if not torch.equal(part, before):
                row, col = (part != before).nonzero()[0].tolist()
                raise Fail(f"called {ctx.sampler_name}.sample(logits [{len(rows)}, 16] {str(dtype)[6:]}, ...) changed logits[{row}, {col}] "
                           f"of the request with {params_text(params[row])}: {before[row, col].item():.4g} -> {part[row, col].item():.4g}",
                           ctx.t("期望：调用方的 logits 不变（logits[i].float() 在 fp32 时不复制，某条路径原地改了它，就改了调用方的张量）",
                                 "expected the caller's logits untouched (logits[i].float() does not copy an fp32 row: a path "
                                 "that edits it in place edits the caller's tensor)"),
                           where=f"{ctx.sampler_name}.sample")
            if prev != prev_before or ids != [f"x{i}" for i in rows]:
                raise Fail(f"called {ctx.sampler_name}.sample(..., prev_tokens={prev_before}) -> prev_tokens is now {prev}, req_ids {ids}",
                           ctx.t("期望：prev_tokens 和 req_ids 不变（别原地排序或追加）", "expected prev_tokens and req_ids "
                                 "untouched (no in-place sort or append)"), where=f"{ctx.sampler_name}.sample")
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
            call = f"called {ctx.sampler_name}.sample(logits [4, 40], {params_text(params[0])})"
            for step in range(5):
                try:
                    got = ctx.sample(sampler, logits, ["a", "b", "c", "d"], params, [[]] * 4)
                except Exception as exc:  # noqa: BLE001 - explained when the cause is established, else re-raised
                    if isinstance(exc, NotImplementedError):
                        raise
                    if kwargs.get("temperature") == 0.0 and runs_at(ctx, logits, 1e-6):
                        raise Fail(f"{call} raised {type(exc).__name__}: {str(exc)[:100]}",
                                   ctx.t("T = 0 时崩溃：先除以温度（x / 0 = inf，0 / 0 = NaN）再判断 greedy。先判断 T < 1e-5",
                                         "T = 0 crashes: the row is divided by the temperature (x / 0 = inf, 0 / 0 = NaN) "
                                         "before the greedy test. Test T < 1e-5 first"), hint=hint,
                                   where=f"{ctx.sampler_name}.sample") from None
                    raise
                if got != argmax:
                    observed = f"{call} at step {step} -> {got}, expected the argmax of each row {argmax}"
                    if kwargs.get("temperature") == 0.0 and got == (logits.cpu() / 0.0).argmax(-1).tolist():
                        raise Fail(observed, ctx.t("结果正是 argmax(row / 0)：先除以温度再判断 greedy，除出来全是 ±inf",
                                                   "the result is exactly argmax(row / 0): the division by the temperature "
                                                   "comes before the greedy test, and gives ±inf"),
                                   hint=hint, where=f"{ctx.sampler_name}.sample")
                    cases = [(logits[i].tolist(), params[i], []) for i in range(4)]
                    diagnose.earlier_step_first(ctx, observed, cases if "temperature" not in kwargs or len(kwargs) > 1 else [])
                    raise Fail(observed, hint=hint, where=f"{ctx.sampler_name}.sample")


def runs_at(ctx, logits, temperature) -> bool:
    """Does sample() run without raising on these rows at this temperature?"""
    try:
        ctx.sample(ctx.sampler(), logits, [f"p{i}" for i in range(len(logits))],
                   [ctx.params(temperature=temperature, seed=i) for i in range(len(logits))], [[]] * len(logits))
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - a probe
        return False
    return True


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
        call = f"called {ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}] {str(dtype)[6:]}, {params_text(params)})"
        for step in range(3):
            try:
                got = ctx.sample(sampler, logits, ["r"], [params], [[]])
            except Exception as exc:  # noqa: BLE001 - the fact (this input crashes) is stated, no cause guessed
                if isinstance(exc, NotImplementedError):
                    raise
                observed = f"{call} raised {type(exc).__name__}: {str(exc)[:100]}"
                diagnose.earlier_step_first(ctx, observed, [(row, params, [])] if dtype == torch.float32 else [])
                raise Fail(observed, ctx.t("这是极端但合法的输入：至少要保留一个 token，也不能出现 NaN（注意 -inf、极大值与 0/0）",
                                           "an extreme but valid input: keep at least one token and never produce NaN "
                                           "(mind -inf, huge values and 0/0)"), where=f"{ctx.sampler_name}.sample") from None
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
        observed = f"a second fresh {ctx.sampler_name}, request 'q' (seed=21), 8 draws -> {again}, expected {first}"
        fresh = getattr(load_module(ctx.impl_path), ctx.sampler_name)()           # a fresh copy of the learner's module
        if draws(fresh, "q", 21, 16) == first + again:
            raise Fail(observed, ctx.t("第二个 sampler 接着第一个的随机流往下抽：generator 存在类属性或模块全局变量里，被所有 sampler 共用；放进 __init__ 的 self 里",
                                       "the second sampler went on with the first one's stream: the generators live in a "
                                       "class attribute or a module-level variable, shared by all samplers; keep them on "
                                       "self, made in __init__"), where=method)
        raise Fail(observed, ctx.t("同一个 seed 在新的 sampler 里要重放同样的随机流", "the same seed in a fresh sampler must replay the same stream"),
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
    zero = []
    for global_seed in (1, 2):                                    # seed=0 must not depend on torch's global seed
        torch.manual_seed(global_seed)
        zero.append(draws(ctx.sampler(), "z", 0, 8))
    if zero[0] != zero[1]:
        raise Fail(f"request 'z' with seed=0 in a fresh {ctx.sampler_name}, after torch.manual_seed(1) -> {zero[0]}, "
                   f"after torch.manual_seed(2) -> {zero[1]}",
                   ctx.t("0 也是一个 seed：`if not seed` / `if params.seed:` 把它当成了没有 seed，要写 `seed is None`",
                         "0 is a seed too: `if not seed` / `if params.seed:` treat it as no seed; test `seed is None`"),
                   where=method)
    pair = ctx.sampler()
    unseeded = [ctx.sample(pair, ctx.tensor([[0.0] * 64] * 2), ["u1", "u2"], [ctx.params(), ctx.params()], [[], []])
                for _ in range(10)]
    if all(a == b for a, b in unseeded):
        raise Fail(f"two unseeded requests with the same 64 equal logits, 10 steps in one batch -> the same tokens "
                   f"{[a for a, _ in unseeded]} for both",
                   ctx.t("没有 seed 的请求共用 sampler 的一个 generator，一个接一个地消费它；不能各自用同一个常数 seed 新建",
                         "unseeded requests share the sampler's one generator, consuming it in turn; they must not each get "
                         "a generator made with the same constant seed"), where=method)
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
    counts = [[0] * 6 for _ in rows]
    for _ in range(steps):
        for r, t in enumerate(ctx.sample(sampler, logits, ids, params, prev)):
            counts[r][t] += 1
    for r, (kw, pv) in enumerate(settings):
        label = f"request {ids[r]!r} ({params_text(params[r])}, prev_tokens={pv}) over {steps} steps"
        if max(counts[r]) == steps and max(expected[r]) < 1 and kw.get("seed") is None:
            observed = f"{label}: drew token {counts[r].index(steps)} every time, expected {fmt_vec(expected[r])}"
            diagnose.earlier_step_first(ctx, observed, [(rows[r], params[r], pv)], stream=True)
            shared = ctx.sampler()                                   # seeded streams move: is the unseeded one stuck?
            flat = [ctx.sample(shared, ctx.tensor([[0.0] * 64]), ["u"], [ctx.params()], [[]])[0] for _ in range(8)]
            if len(set(flat)) == 1:
                raise Fail(observed, f"8 draws of an unseeded request over 64 equal logits -> {flat}",
                           ctx.t("没有 seed 的请求每一步都抽到同一个 token：共享的 generator 每步都重建了，要在 sampler 里保留一个",
                                 "an unseeded request draws the same token every step: the shared generator is rebuilt every "
                                 "step; keep one in the sampler"), hint=("p08", 1, "q6"), where=f"{ctx.sampler_name}.sample")
        if ids[r] == "equal":                                          # which 2 of the 4 is a tie rule: any 2 will do
            drawn = sorted(i for i, c in enumerate(counts[r]) if c)
            if len(drawn) != 2:
                observed = f"{label} over [{fmt_vec(rows[r])[1:-1]}]: drew tokens {drawn}, expected exactly 2 of the 4 equal ones"
                diagnose.earlier_step_first(ctx, observed, [(rows[r], params[r], pv)], stream=True)
                raise Fail(observed, ctx.t("第 3 个 token 之前的质量恰好是 0.5 = top_p：它要被删掉（mass_before >= top_p，不是 >）",
                                           "the mass before the 3rd token is exactly 0.5 = top_p: it is removed (mass before >= "
                                           "top_p, not >)"), hint=("p08", 1, "q4"), where=f"{ctx.sampler_name}.sample")
            expected[r] = [0.5 if i in drawn else 0.0 for i in range(6)]
        expect_distribution(ctx, label, counts[r], expected[r], steps, ("p08", 2, "s6"), case=(rows[r], params[r], pv))


TIES_ROW = [2.0, 1.0, 1.0, 0.0, -1.0, -1.0]
EQUAL_ROW = [0.7, 0.7, 0.7, 0.7, float("-inf"), float("-inf")]
