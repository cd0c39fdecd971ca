"""Acceptance checks E1-E3: the seed page's worked examples, with its numbers."""
import math

import torch

from course import oracle
from course.grader.checks import Fail, check, fmt_set, fmt_vec, params_text
from tests.p08 import diagnose

PROBS = [0.5, 0.25, 0.15, 0.1]                       # the worked example's distribution at T = 1
LOG_PROBS = [math.log(p) for p in PROBS]             # [-0.693, -1.386, -1.897, -2.303]
BOTH = ("p08", "p08-fast")


def kept_ids(out) -> set:
    return {i for i, v in enumerate(out.tolist()) if v != float("-inf")}


def expect_filter(ctx, name, logits, arg, out, expected_keep, hint, why=None):
    """out must keep exactly `expected_keep` (unchanged values) and hold -inf everywhere else."""
    call = f"called {name}({fmt_vec(logits)}, {arg})"
    got = kept_ids(out)
    if got != set(expected_keep):
        raise Fail(f"{call} -> kept {fmt_set(got)}, expected {fmt_set(expected_keep)}", *[w for w in [why] if w], hint=hint,
                   where=name)
    removed_ok = all(out[i].item() == float("-inf") for i in range(len(out)) if i not in got)
    values_ok = torch.allclose(out[list(got)].double().cpu(), logits[list(got)].double().cpu(), rtol=1e-6, atol=1e-6)
    if not (removed_ok and values_ok):
        raise Fail(f"{call} -> {fmt_vec(out)}",
                   ctx.t("期望：保留的位置值不变，其余位置恰好是 -inf", "expected: kept values unchanged, every other entry exactly -inf"),
                   hint=hint, where=name)


def renormalised(out) -> list:
    return oracle.softmax([float(v) for v in out.tolist()])


# ---- E1 ----------------------------------------------------------------------------------------------
@check("E1.penalty", "重复惩罚：数值、去重、负 logit", "repetition penalty: values, distinct ids, negative logits",
       hint=("p08", 1, "e1"), problems=("p08",))
def e1_penalty_values(ctx):
    logits = ctx.tensor([3.0, -1.0, 0.5, -0.2])
    call = "called apply_repetition_penalty(tensor([3.0, -1.0, 0.5, -0.2]), prev_tokens=[1, 3, 3], penalty=1.5)"
    out = ctx.vector("apply_repetition_penalty", logits, [1, 3, 3], 1.5)
    got = [round(v, 4) for v in out.tolist()]
    if not torch.allclose(out.cpu().double(), torch.tensor([3.0, -1.5, 0.5, -0.3], dtype=torch.float64), atol=1e-5):
        why, hint = ctx.t("", ""), ("p08", 1, "e1")
        if abs(got[3] + 0.45) < 1e-3:
            why, hint = ctx.t("token 3 出现两次就罚了两次：历史要先去重", "token 3 was penalised twice: de-duplicate the history first"), ("p08", 1, "q1")
        elif abs(got[1] + 1.0 / 1.5) < 1e-3:
            why, hint = ctx.t("负 logit 被除了：负数要乘以 penalty 才是惩罚", "a negative logit was divided: negatives must be multiplied"), ("p08", 1, "q2")
        raise Fail(f"{call} -> {got}, expected [3.0, -1.5, 0.5, -0.3]", *[w for w in [why] if w], hint=hint,
                   where="apply_repetition_penalty")
    row = ctx.tensor([0.5, -1.0, 0.0, 1.0, 2.0])
    out = ctx.vector("apply_repetition_penalty", row, [4, 4, 4], 2.0)
    if abs(out[4].item() - 1.0) > 1e-6:
        got = out[4].item()
        why, hint = {0.25: (ctx.t("罚了三次：历史要先去重", "penalised three times: de-duplicate the history first"), ("p08", 1, "q1")),
                     4.0: (ctx.t("正的 logit 被乘了：正数要除以 penalty", "a positive logit was multiplied: positives are divided"),
                           ("p08", 1, "q2"))}.get(round(got, 4), ("", ("p08", 1, "e1")))
        raise Fail(f"called apply_repetition_penalty({fmt_vec(row)}, prev_tokens=[4, 4, 4], penalty=2) -> token 4 = "
                   f"{got:.4g}, expected 1.0 (2.0 / 2, once)", *[w for w in [why] if w], hint=hint,
                   where="apply_repetition_penalty")
    below_one = ctx.tensor([3.0, -1.0, 0.5, -0.2])
    out = ctx.vector("apply_repetition_penalty", below_one, [0, 1], 0.5)
    if not torch.allclose(out.cpu().double(), torch.tensor([6.0, -0.5, 0.5, -0.2], dtype=torch.float64), atol=1e-5):
        raise Fail(f"called apply_repetition_penalty([3.0, -1.0, 0.5, -0.2], prev_tokens=[0, 1], penalty=0.5) -> "
                   f"{fmt_vec(out)}, expected [6, -0.5, 0.5, -0.2]",
                   ctx.t("penalty < 1 也是同一条规则：正数 v / p（变大），负数 v * p（向 0 靠近）；不要写成“总是变小”",
                         "penalty < 1 follows the same rule: positive v / p (grows), negative v * p (towards 0); not 'always lower'"),
                   hint=("p08", 1, "q2"), where="apply_repetition_penalty")
    long_history = [0] + [5 + i % 7 for i in range(3000)] + [15]   # tokens 0 and 15 seen once: first and last
    wide = ctx.tensor([2.0] + [0.1 * j for j in range(1, 16)])
    cases = ((row, [1, 3], 1.0, "prev_tokens=[1, 3], penalty=1"), (row, [], 1.7, "prev_tokens=[], penalty=1.7"),
             (logits, torch.tensor([1, 3, 3]), 1.5, "prev_tokens=tensor([1, 3, 3]), penalty=1.5"),
             (row, [0, 2, 3], 0.8, "prev_tokens=[0, 2, 3], penalty=0.8"),
             (wide, long_history, 1.3, "prev_tokens=[0, 5, 6, ..., 15] (3002 ids; 0 only first, 15 only last), penalty=1.3"))
    big = torch.zeros(50257, device=ctx.device)                    # ids past 32767 and 65535 must hit their own token
    big[[40000, 50256, 7232]] = torch.tensor([2.0, -1.0, 3.0], device=ctx.device)
    cases += ((big, [40000, 50256], 2.0, "V=50257, prev_tokens=[40000, 50256], penalty=2"),)
    for base, prev, penalty, label in cases:
        out = ctx.vector("apply_repetition_penalty", base, prev, penalty)
        expected = oracle.penalize(base.tolist(), torch.as_tensor(prev, dtype=torch.long).tolist(), penalty)
        if not torch.allclose(out.cpu().double(), torch.tensor(expected, dtype=torch.float64), atol=1e-5):
            wrong = [i for i, (a, b) in enumerate(zip(out.tolist(), expected)) if abs(a - b) > 1e-5]
            raise Fail(f"called apply_repetition_penalty({fmt_vec(base)}, {label}) -> {fmt_vec(out)}, expected {fmt_vec(expected)}",
                       ctx.t(f"token {wrong[0]} 的值不对", f"token {wrong[0]} is wrong") + (
                           ctx.t("：整个历史都算，从第一个 token 到最后一个", ": the whole history counts, from its first token to its last")
                           if len(prev) > 100 and wrong[0] in (0, 15) else ""),
                       where="apply_repetition_penalty")


@check("E1.greedy", "penalty 在 greedy 判断之前生效", "the penalty also applies to greedy rows",
       hint=("p08", 1, "q3"), problems=BOTH)
def e1_greedy_after_penalty(ctx):
    row = [3.0, -1.0, 2.5, -0.2]
    for temperature in (0.0, 1e-6):
        params = ctx.params(temperature=temperature, repetition_penalty=1.5)
        call = f"called {ctx.sampler_name}.sample([[3.0, -1.0, 2.5, -0.2]], ['r'], [{params_text(params)}], prev_tokens=[[0]])"
        try:
            got = ctx.sample(ctx.sampler(), ctx.tensor([row]), ["r"], [params], [[0]])
        except Exception as exc:  # noqa: BLE001 - explained below when an earlier step is the cause, else re-raised
            if isinstance(exc, NotImplementedError):
                raise
            diagnose.earlier_step_first(ctx, f"{call} raised {type(exc).__name__}", [(row, params, [0])], greedy=True)
            raise
        if got != [2]:
            diagnose.earlier_step_first(ctx, f"{call} -> {got}, expected [2]", [(row, params, [0])], greedy=True)
            sampled = ctx.params(top_k=1, repetition_penalty=1.5, seed=3)
            if ctx.sample(ctx.sampler(), ctx.tensor([row]), ["r"], [sampled], [[0]]) != [2]:
                raise Fail(f"{call} -> {got}, expected [2]",
                           ctx.t("用 top_k=1 的非 greedy 行也一样选了 token 0：sample() 根本没有用 prev_tokens[i] 做 penalty",
                                 "a non-greedy row with top_k=1 also picks token 0: sample() does not apply the penalty with "
                                 "prev_tokens[i] at all"), hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
            raise Fail(f"{call} -> {got}, expected [2]",
                       ctx.t("token 0 罚后 3.0/1.5 = 2.0 < 2.5，greedy 应改选 token 2；不加 penalty 的 greedy 行是对的，"
                             "所以是 penalty 放在了 greedy 判断之后：penalty 要在 greedy 判断之前",
                             "token 0 becomes 3.0/1.5 = 2.0 < 2.5, so greedy picks token 2; greedy rows without a penalty are "
                             "right, so the penalty comes after the greedy test: penalise before it"),
                       where=f"{ctx.sampler_name}.sample")


# ---- E2 ----------------------------------------------------------------------------------------------
@check("E2.top_k", "top-k 保留集合（-1、0、1、V-1、V、V+5、并列）", "top-k keep sets (-1, 0, 1, V-1, V, V+5, ties)",
       hint=("p08", 1, "q5"), problems=("p08",))
def e2_top_k_keep_sets(ctx):
    logits = ctx.tensor(LOG_PROBS)
    cases = [(2, {0, 1}), (1, {0}), (3, {0, 1, 2}), (-1, {0, 1, 2, 3}), (0, {0, 1, 2, 3}), (4, {0, 1, 2, 3}),
             (9, {0, 1, 2, 3})]
    for k, keep in cases:
        try:
            out = ctx.vector("apply_top_k", logits, k)
        except Exception as exc:  # noqa: BLE001 - an 'off' value that crashes: say what off means
            if isinstance(exc, NotImplementedError) or 0 < k < 4:
                raise
            raise Fail(f"called apply_top_k({fmt_vec(logits)}, top_k={k}) raised {type(exc).__name__}: {str(exc)[:100]}",
                       ctx.t("top_k = -1、0 或 >= V 都表示关闭：返回不变的副本", "top_k = -1, 0 or >= V means off: return the "
                             "row unchanged (a copy)"), hint=("p08", 1, "q5"), where="apply_top_k") from None
        expect_filter(ctx, "apply_top_k", logits, f"top_k={k}", out, keep, ("p08", 1, "q5"))
    out = ctx.vector("apply_top_k", logits, 2)
    probs = renormalised(out)
    if max(abs(a - b) for a, b in zip(probs, [2 / 3, 1 / 3, 0, 0])) > 1e-4:
        raise Fail(f"softmax(apply_top_k(log {PROBS}, top_k=2)) -> {fmt_vec(probs)}, expected [0.667, 0.333, 0, 0]",
                   where="apply_top_k")
    shuffled = ctx.tensor([0.1, 2.0, float("-inf"), 1.5, -0.7, 0.9])
    spread = ctx.tensor([0.0, -200.0, -300.0, -400.0, -500.0])                  # softmax underflows to 0 past token 0
    expect_filter(ctx, "apply_top_k", spread, "top_k=2", ctx.vector("apply_top_k", spread, 2), {0, 1}, ("p08", 1, "q5"))
    for k, keep in ((2, {1, 3}), (5, {0, 1, 3, 4, 5}), (4, {0, 1, 3, 5})):
        expect_filter(ctx, "apply_top_k", shuffled, f"top_k={k}", ctx.vector("apply_top_k", shuffled, k), keep, ("p08", 1, "q5"))
    for values, k, keep in (([1.0, 3.0, 2.0, 2.0, 0.5], 2, {1, 2, 3}), ([0.5, 1.0, 1.0, 1.0, 1.0, 0.0], 1, {1, 2, 3, 4}),
                            ([2.0, 0.0, 1.0, 0.0, 0.0, -1.0], 3, {0, 1, 2, 3, 4})):
        ties = ctx.tensor(values)
        got = kept_ids(ctx.vector("apply_top_k", ties, k))
        if got != keep:
            raise Fail(f"called apply_top_k({fmt_vec(ties)}, top_k={k}) -> kept {fmt_set(got)}, expected {fmt_set(keep)}",
                       ctx.t("和第 k 大的值相等的 token 都要留下（保留 >= 第 k 大的值），不是恰好 k 个",
                             "every token tied with the k-th largest value stays (keep values >= the k-th), not exactly k"),
                       hint=("p08", 1, "q5"), where="apply_top_k")


@check("E2.top_p", "top-p 保留集合（越过阈值的 token 要留下）", "top-p keep sets (the token that crosses top_p stays)",
       hint=("p08", 1, "q4"), problems=("p08",))
def e2_top_p_keep_sets(ctx):
    logits = ctx.tensor(LOG_PROBS)
    for top_p, keep in ((0.4, {0}), (0.7, {0, 1}), (0.8, {0, 1, 2}), (1e-9, {0}), (0.95, {0, 1, 2, 3}),
                        (1.0, {0, 1, 2, 3}), (0.7500005, {0, 1, 2})):             # 0.75 before token 2: just below
        out = ctx.vector("apply_top_p", logits, top_p)
        why = ctx.t("token 2 之前的质量是 0.75，比 top_p = 0.7500005 小：它要留下（比较里不要加 epsilon）",
                    "the mass before token 2 is 0.75, just below top_p = 0.7500005: it stays (no epsilon in the "
                    "comparison)") if top_p == 0.7500005 else None
        expect_filter(ctx, "apply_top_p", logits, f"top_p={top_p}", out, keep, ("p08", 1, "q4"), why)
    probs = renormalised(ctx.vector("apply_top_p", logits, 0.7))
    if max(abs(a - b) for a, b in zip(probs, [2 / 3, 1 / 3, 0, 0])) > 1e-4:
        raise Fail(f"softmax(apply_top_p(log {PROBS}, top_p=0.7)) -> {fmt_vec(probs)}, expected [0.667, 0.333, 0, 0]",
                   where="apply_top_p")
    # the same distribution in another vocab order: the decision must be mapped back through the sort order
    order = [2, 0, 3, 1]
    shuffled = ctx.tensor([LOG_PROBS[i] for i in order])           # token j holds PROBS[order[j]]
    for top_p, keep in ((0.7, {1, 3}), (0.8, {0, 1, 3}), (0.3, {1})):
        expect_filter(ctx, "apply_top_p", shuffled, f"top_p={top_p}", ctx.vector("apply_top_p", shuffled, top_p),
                      keep, ("p08", 2, "s5"))
    with_inf = ctx.tensor([float("-inf"), LOG_PROBS[1], float("-inf"), LOG_PROBS[0], LOG_PROBS[2]])
    expect_filter(ctx, "apply_top_p", with_inf, "top_p=0.6", ctx.vector("apply_top_p", with_inf, 0.6), {1, 3}, ("p08", 1, "q4"))
    dominant = ctx.tensor([0.0, -30.0, -30.0, -30.0])             # fp32 cumsum hits 1.0 after token 0
    expect_filter(ctx, "apply_top_p", dominant, "top_p=1.0", ctx.vector("apply_top_p", dominant, 1.0), {0, 1, 2, 3},
                  ("p08", 1, "q4"), ctx.t("top_p = 1 表示关闭：原样返回（fp32 的累计质量在 token 0 之后就到 1.0 了，不能拿它来删）",
                                          "top_p = 1 means off: return the row unchanged (here the fp32 mass reaches 1.0 right "
                                          "after token 0, so running the filter would remove the rest)"))
    # exact boundaries: 4 equal logits have probs 0.25 each, exact in fp32, so 'mass before' hits top_p exactly
    equal = ctx.tensor([1.5] * 4 + [float("-inf")] * 2)
    for top_p, count in ((0.25, 1), (0.5, 2), (0.75, 3)):
        got = kept_ids(ctx.vector("apply_top_p", equal, top_p))
        if len(got) != count or not got <= {0, 1, 2, 3}:
            raise Fail(f"called apply_top_p({fmt_vec(equal)}, top_p={top_p}) -> kept {fmt_set(got)}, expected {count} of the "
                       f"4 equal tokens",
                       ctx.t(f"第 {count + 1} 个 token 之前的质量恰好是 {top_p}，已经达到 top_p：它要被删掉（mass_before >= top_p，不是 >）",
                             f"the mass before token {count + 1} is exactly {top_p}, which already reaches top_p: it is removed "
                             f"(mass before >= top_p, not >)"),
                       hint=("p08", 1, "q4"), where="apply_top_p")


@check("E2.trace", "逐步追踪：top_k=3 再 top_p=0.6", "the worked trace: top_k=3, then top_p=0.6",
       hint=("p08", 3, "trace"), problems=("p08",))
def e2_worked_trace(ctx):
    logits = ctx.tensor(LOG_PROBS)
    after_k = ctx.vector("apply_top_k", logits, 3)
    expect_filter(ctx, "apply_top_k", logits, "top_k=3", after_k, {0, 1, 2}, ("p08", 3, "trace"))
    after_p = ctx.vector("apply_top_p", after_k, 0.6)
    expect_filter(ctx, "apply_top_p", after_k, "top_p=0.6", after_p, {0, 1}, ("p08", 3, "trace"))
    probs = renormalised(after_p)
    if max(abs(a - b) for a, b in zip(probs, [2 / 3, 1 / 3, 0, 0])) > 1e-4:
        raise Fail(f"softmax after top_k=3, top_p=0.6 -> {fmt_vec(probs)}, expected [0.667, 0.333, 0, 0]",
                   where="apply_top_p")
    # top-p must see the distribution left after top-k: [0.4, 0.3, 0.2, 0.1], top_k=2 -> [0.571, 0.429]
    row = ctx.tensor([math.log(p) for p in (0.4, 0.3, 0.2, 0.1)])
    after_k = ctx.vector("apply_top_k", row, 2)
    after_p = ctx.vector("apply_top_p", after_k, 0.55)
    expect_filter(ctx, "apply_top_p", after_k, "top_p=0.55 (probs after top-k: [0.571, 0.429, 0, 0])", after_p, {0},
                  ("p08", 1, "q4"))


def draw_many(ctx, settings, draws, vocab_row, first_seed):
    """Counts per token for each setting: `draws` requests per setting, each seeded, all in one batch."""
    sampler, rows, ids, params = ctx.sampler(), [], [], []
    for s, kwargs in enumerate(settings):
        for n in range(draws):
            rows.append(vocab_row)
            ids.append(f"s{s}-{n}")
            params.append(ctx.params(seed=first_seed + s * draws + n, **kwargs))
    logits = ctx.tensor(rows)
    tokens = ctx.sample(sampler, logits, ids, params, [[] for _ in ids])
    counts = []
    for s in range(len(settings)):
        c = [0] * len(vocab_row)
        for t in tokens[s * draws:(s + 1) * draws]:
            c[t] += 1
        counts.append(c)
    return counts


def expect_distribution(ctx, label, counts, expected, draws, hint, case=None):
    """Fail unless counts fit expected (6 sigma). case = (row, params, prev): on a failure, first rule out an
    earlier step (the learner's own pieces on this row, the seeded stream), then name a known mistake the
    draws fit, if exactly one does."""
    bad = oracle.sigma_violations(counts, expected, draws)
    if not bad:
        return
    token, observed, p, allowed = bad[0]
    freqs = fmt_vec([c / draws for c in counts])
    head = f"{label}: {draws} draws -> frequencies {freqs}, expected {fmt_vec(expected)}"
    detail = ctx.t(f"token {token}: 观测 {observed:.3f}，期望 {p:.3f}（允许 ±{allowed:.3f}，6 个标准差）",
                   f"token {token}: observed {observed:.3f}, expected {p:.3f} (allowed ±{allowed:.3f}, 6 standard deviations)")
    if case is not None:
        row, params, prev = case
        diagnose.earlier_step_first(ctx, head, [case], stream=True, filters=params.top_k > 0 or params.top_p < 1)
        mistake = diagnose.matching_mistake(ctx, counts, draws, row, params, prev)
        if mistake:
            raise Fail(head, detail, ctx.t(f"抽样结果正好符合这种错误：{mistake}", f"the draws fit exactly this mistake: {mistake}"),
                       hint=hint, where=f"{ctx.sampler_name}.sample")
    raise Fail(head, detail, hint=hint, where=f"{ctx.sampler_name}.sample")


@check("E2.temperature", "温度表与 top_k=2 的经验分布", "the temperature table and top_k=2, drawn",
       hint=("p08", 1, "e2"), problems=BOTH)
def e2_temperatures_drawn(ctx):
    settings = [dict(temperature=0.5), dict(temperature=2.0), dict(top_k=2)]
    draws = 3000
    counts = draw_many(ctx, settings, draws, LOG_PROBS, first_seed=1000)
    for kwargs, c in zip(settings, counts):
        expected = oracle.filtered_probs(LOG_PROBS, **kwargs)
        expect_distribution(ctx, f"sample(log {PROBS}, {kwargs})", c, expected, draws, ("p08", 1, "e2"),
                            case=(LOG_PROBS, ctx.params(**kwargs), []))


# ---- E3 ----------------------------------------------------------------------------------------------
E3_ROW = [1.0, 0.5, 0.0, -0.5, 0.2, 0.9]


@check("E3", "单独 vs 混合：seed=7 的请求 q", "alone vs mixed: request q with seed 7",
       hint=("p08", 1, "e3"), problems=BOTH)
def e3_alone_vs_mixed(ctx):
    q = ctx.params(seed=7)
    peers = {"a": ctx.params(seed=7), "b": ctx.params(), "c": ctx.params(temperature=0.0),
             "d": ctx.params(seed=99, top_k=3), "e": ctx.params(seed=5, temperature=1.7)}
    batches = [["q"], ["b", "q"], ["a", "c", "d", "q"], ["q", "e", "b"], ["d", "b", "a", "e", "c", "q"], ["e", "q", "a"]]

    def run(sampler, steps, with_peers):
        tokens = []
        for step in range(steps):
            ids = batches[step] if with_peers else ["q"]
            params = [q if r == "q" else peers[r] for r in ids]
            out = ctx.sample(sampler, ctx.tensor([E3_ROW] * len(ids)), ids, params, [[] for _ in ids])
            tokens.append(out[ids.index("q")])
        return tokens

    alone = run(ctx.sampler(), 6, with_peers=False)
    sampler = ctx.sampler()
    mixed = run(sampler, 6, with_peers=True)
    if mixed != alone:
        step = next(i for i, (a, b) in enumerate(zip(alone, mixed)) if a != b)
        if batches[step] == ["q"] and step == 0:          # no peer yet: the second sampler object was not fresh
            raise Fail(f"q (seed=7) alone: {alone}; in a second {ctx.sampler_name}: {mixed}; they differ at step 0, where q is alone",
                       ctx.t("第二个 sampler 的第一步就不同，那时还没有同伴：generator 存在类属性或模块全局变量里，被所有 sampler 共用",
                             "the second sampler differs at step 0, before any peer: the generators live in a class attribute "
                             "or a module-level variable, shared by all samplers"), hint=("p08", 1, "q6"),
                       where=f"{ctx.sampler_name}.sample")
        raise Fail(f"q (seed=7) alone: {alone}; mixed: {mixed}; first difference at step {step}, batch {batches[step]}",
                   ctx.t("同一个 seed 的请求，结果不能随 batch 里的别人变化：每个请求要用自己的 generator",
                         "a seeded request's tokens must not depend on its peers: each request needs its own generator"),
                   hint=("p08", 1, "q7"), where=f"{ctx.sampler_name}.sample")
    sampler.free("q")
    replay = run(sampler, 3, with_peers=False)
    if replay != alone[:3]:
        raise Fail(f"free('q'), then q (seed=7) again for 3 steps -> {replay}, expected the first 3 again {alone[:3]}",
                   ctx.t("free 之后同名请求要从头开始新的随机流", "after free, a request reusing the id must start a fresh stream"),
                   hint=("p08", 1, "q6"), where=f"{ctx.sampler_name}.free")
