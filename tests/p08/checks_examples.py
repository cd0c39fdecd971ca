"""Acceptance checks E2-E3: the seed page's worked examples, with its numbers, and E2.small_t: small temperatures
used exactly (E1, the penalty: checks_penalty.py)."""
import math

import torch

from course import oracle
from course.grader.checks import RAISE_AS_IS, Fail, check, fmt_set, fmt_vec
from tests.p08 import diagnose
from tests.p08.draws import counts_of, draws_of, worst_z

PROBS = [0.5, 0.25, 0.15, 0.1]                       # the worked example's distribution at T = 1
LOG_PROBS = [math.log(p) for p in PROBS]             # [-0.693, -1.386, -1.897, -2.303]


def kept_ids(out) -> set:
    return {i for i, v in enumerate(out.tolist()) if v != float("-inf")}


def expect_filter(ctx, name, logits, arg, out, expected_keep, hint, why=None):
    """out must keep exactly `expected_keep` (unchanged values) and hold -inf everywhere else."""
    call = ctx.t("调用 ", "called ") + f"{name}({fmt_vec(logits)}, {arg})"
    got = kept_ids(out)
    if got != set(expected_keep):
        raise Fail(f"{call} -> " + ctx.t(f"保留 {fmt_set(got)}，期望 {fmt_set(expected_keep)}",
                                         f"kept {fmt_set(got)}, expected {fmt_set(expected_keep)}"), *[w for w in [why] if w], hint=hint,
                   where=name)
    removed_ok = all(out[i].item() == float("-inf") for i in range(len(out)) if i not in got)
    values_ok = torch.allclose(out[list(got)].double().cpu(), logits[list(got)].double().cpu(), rtol=1e-6, atol=1e-6)
    if not (removed_ok and values_ok):
        raise Fail(f"{call} -> {fmt_vec(out)}",
                   ctx.t("期望：保留的位置值不变，其余位置恰好是 -inf", "expected: kept values unchanged, every other entry exactly -inf"),
                   hint=hint, where=name)


def drops_the_crossing_token(ctx, logits) -> bool:
    """Does apply_top_p keep, at top_p 0.7, 0.8 and 0.95 on the worked example's row, exactly the tokens whose mass up
    to and including themselves is <= top_p (the crossing token dropped)? Each of the three sets differs from the
    right one, so three matches establish the cause."""
    for top_p in (0.7, 0.8, 0.95):
        inclusive = {i for i in range(len(PROBS)) if sum(PROBS[:i + 1]) <= top_p} or {0}
        if kept_ids(ctx.vector("apply_top_p", logits, top_p)) != inclusive:
            return False
    return True


def mapped_by_gather(ctx, logits, cases) -> bool:
    """Does apply_top_p keep, on a row out of vocab order, for each (top_p, right set) of cases, exactly the tokens whose
    own sorted position is below the kept count (the sorted decision read back with a gather, remove_sorted[order],
    instead of scattered to the tokens it belongs to)? Each such set differs from the right one."""
    order = torch.sort(logits.cpu(), descending=True, stable=True).indices.tolist()           # [V] sorted -> token
    for top_p, keep in cases:
        gathered = {j for j in range(len(order)) if order[j] < len(keep)}
        if gathered == set(keep) or kept_ids(ctx.vector("apply_top_p", logits, top_p)) != gathered:
            return False
    return True


def renormalised(out) -> list:
    return oracle.softmax([float(v) for v in out.tolist()])


# ---- E1 ----------------------------------------------------------------------------------------------
@check("E2.top_k", "top-k 保留集合（-1、0、1、V-1、V、V+5、并列）", "top-k keep sets (-1, 0, 1, V-1, V, V+5, ties)",
       hint=("p08", 1, "q5"))
def e2_top_k_keep_sets(ctx):
    logits = ctx.tensor(LOG_PROBS)
    cases = [(2, {0, 1}), (1, {0}), (3, {0, 1, 2}), (-1, {0, 1, 2, 3}), (0, {0, 1, 2, 3}), (-2, {0, 1, 2, 3}),
             (4, {0, 1, 2, 3}), (9, {0, 1, 2, 3})]
    for k, keep in cases:
        try:
            out = ctx.vector("apply_top_k", logits, k)
        except Exception as exc:  # noqa: BLE001 - an 'off' value that crashes: say what off means
            if isinstance(exc, RAISE_AS_IS) or 0 < k < 4:
                raise
            raise Fail(ctx.t("调用 ", "called ") + f"apply_top_k({fmt_vec(logits)}, top_k={k}) " + ctx.t("抛出", "raised")
                       + f" {type(exc).__name__}: {str(exc)[:100]}",
                       ctx.t("只有 0 < top_k < V 时 top-k 才打开；-1、0、其他负数和 >= V 都表示关闭：返回不变的副本",
                             "top-k is on only when 0 < top_k < V: -1, 0, any other negative value and >= V mean off: "
                             "return the row unchanged (a copy)"), hint=("p08", 1, "q5"), where="apply_top_k") from None
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
            raise Fail(ctx.t("调用 ", "called ") + f"apply_top_k({fmt_vec(ties)}, top_k={k}) -> "
                       + ctx.t(f"保留 {fmt_set(got)}，期望 {fmt_set(keep)}", f"kept {fmt_set(got)}, expected {fmt_set(keep)}"),
                       ctx.t("和第 k 大的值相等的 token 都要留下（保留 >= 第 k 大的值），不是恰好 k 个",
                             "every token tied with the k-th largest value stays (keep values >= the k-th), not exactly k"),
                       hint=("p08", 1, "q5"), where="apply_top_k")


TAIL_ROW = [math.log(p) for p in (0.5, 0.3, 0.191, 0.009)]          # mass before token 3: 0.991


@check("E2.top_p", "top-p 保留集合（越过阈值的 token 要留下）", "top-p keep sets (the token that crosses top_p stays)",
       hint=("p08", 1, "q4"))
def e2_top_p_keep_sets(ctx):
    logits = ctx.tensor(LOG_PROBS)
    for top_p, keep in ((0.4, {0}), (0.7, {0, 1}), (0.8, {0, 1, 2}), (1e-9, {0}), (0.95, {0, 1, 2, 3}),
                        (1.0, {0, 1, 2, 3}), (0.7500005, {0, 1, 2})):             # 0.75 before token 2: just below
        out = ctx.vector("apply_top_p", logits, top_p)
        why = ctx.t("排第 3 的 token（id 2）之前的质量是 0.75，比 top_p = 0.7500005 小：它要留下（比较里不要加 epsilon）",
                    "the mass before the 3rd-ranked token (id 2) is 0.75, just below top_p = 0.7500005: it stays (no "
                    "epsilon in the comparison)") if top_p == 0.7500005 else None
        if kept_ids(out) != keep and why is None and drops_the_crossing_token(ctx, logits):
            why = ctx.t("你的 apply_top_p 在 top_p = 0.7、0.8、0.95 时都只留下“连同自己在内的累计质量 <= top_p”的 token："
                        "越过 top_p 的那个 token 被删了（cumsum > top_p 的写法）。要比的是每个 token 之前的质量（cumsum - p）",
                        "with top_p = 0.7, 0.8 and 0.95 your apply_top_p keeps exactly the tokens whose mass up to and "
                        "including themselves is <= top_p: the token that crosses top_p was removed (a cumsum > top_p "
                        "cut). Compare the mass before each token (cumsum - p) with top_p")
        expect_filter(ctx, "apply_top_p", logits, f"top_p={top_p}", out, keep, ("p08", 1, "q4"), why)
    tail = ctx.tensor(TAIL_ROW)                                     # a top_p near 1 is still on
    for top_p in (0.99, 0.999):
        keep = {0, 1, 2} if top_p == 0.99 else {0, 1, 2, 3}
        expect_filter(ctx, "apply_top_p", tail, f"top_p={top_p}", ctx.vector("apply_top_p", tail, top_p), keep,
                      ("p08", 1, "q4"), ctx.t(f"排第 4 的 token（id 3）之前的质量是 0.991：top_p = {top_p} 时"
                                              + ("它要被删掉" if top_p == 0.99 else "它要留下") + "；只有 top_p = 1 才表示关闭",
                                              f"the mass before the 4th-ranked token (id 3) is 0.991: with top_p = {top_p} it "
                                              + ("is removed" if top_p == 0.99 else "stays") + "; only top_p = 1 means off"))
    probs = renormalised(ctx.vector("apply_top_p", logits, 0.7))
    if max(abs(a - b) for a, b in zip(probs, [2 / 3, 1 / 3, 0, 0])) > 1e-4:
        raise Fail(f"softmax(apply_top_p(log {PROBS}, top_p=0.7)) -> {fmt_vec(probs)}, expected [0.667, 0.333, 0, 0]",
                   where="apply_top_p")
    # the same distribution in another vocab order: the decision must be mapped back through the sort order
    order = [2, 0, 3, 1]
    shuffled = ctx.tensor([LOG_PROBS[i] for i in order])           # token j holds PROBS[order[j]]
    cases = ((0.7, {1, 3}), (0.8, {0, 1, 3}), (0.3, {1}))
    for top_p, keep in cases:
        out = ctx.vector("apply_top_p", shuffled, top_p)
        why = ctx.t("在这一行（不按词表顺序排）上，top_p = 0.7、0.8、0.3 时你保留的正是把排序后的决定用 gather 读回来（remove_sorted[order]）"
                    "得到的集合：排序后第 i 个位置的决定属于 token order[i]，要用 scatter 放回去（remove[order] = remove_sorted），"
                    "那是 gather 的逆",
                    "on this row (not in vocab order) at top_p 0.7, 0.8 and 0.3 you keep exactly what reading the sorted decision "
                    "back with a gather (remove_sorted[order]) gives: the decision at sorted position i belongs to token "
                    "order[i]; put it back with a scatter (remove[order] = remove_sorted), the inverse of that gather") \
            if kept_ids(out) != keep and mapped_by_gather(ctx, shuffled, cases) else None
        expect_filter(ctx, "apply_top_p", shuffled, f"top_p={top_p}", out, keep, ("p08", 2, "s5"), why)
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
            if len(got) == count + 1 and got <= {0, 1, 2, 3}:             # one more: the boundary token stayed
                why = ctx.t(f"排第 {count + 1} 的 token（相等的值按 id 排，即 id {count}）之前的质量恰好是 {top_p}，已经达到 top_p："
                            f"它要被删掉（mass_before >= top_p，不是 >）",
                            f"the mass before the token ranked {count + 1} (equal values rank by id: id {count}) is exactly "
                            f"{top_p}, which already reaches top_p: it is removed (mass before >= top_p, not >)")
            elif got == {0, 1, 2, 3}:                                       # the whole run of equal logits stayed
                why = ctx.t(f"4 个相等的 token 全留下了：top-p 在排好序的 token 上一个一个地数（并列的顺序任意），每个 token 由它之前的质量决定，"
                            f"所以相等的 token 也可以被切开：只留 {count} 个",
                            f"all 4 equal tokens stayed: top-p walks the sorted tokens one at a time (ties in any order) and "
                            f"the mass before each one decides, so a cut can split equal logits: keep {count}")
            else:
                why = None
            raise Fail(ctx.t("调用 ", "called ") + f"apply_top_p({fmt_vec(equal)}, top_p={top_p}) -> " + ctx.t(
                           f"保留 {fmt_set(got)}，期望 4 个相等 token 中的 {count} 个",
                           f"kept {fmt_set(got)}, expected {count} of the 4 equal tokens"), *[w for w in [why] if w], hint=("p08", 1, "q4"), where="apply_top_p")


@check("E2.trace", "逐步追踪：top_k=3 再 top_p=0.6", "the worked trace: top_k=3, then top_p=0.6",
       hint=("p08", 3, "trace"))
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
    head = ctx.t(f"{label}：抽 {draws} 次 -> 频率 {freqs}，期望 {fmt_vec(expected)}",
                 f"{label}: {draws} draws -> frequencies {freqs}, expected {fmt_vec(expected)}")
    detail = ctx.t(f"token {token}: 观测 {observed:.3f}，期望 {p:.3f}（允许 ±{allowed:.3f}，6 个标准差）",
                   f"token {token}: observed {observed:.3f}, expected {p:.3f} (allowed ±{allowed:.3f}, 6 standard deviations)")
    if case is not None:
        row, params, prev = case
        diagnose.earlier_step_first(ctx, head, [case], stream=True, filters=params.top_k > 0 or params.top_p < 1)
        if peers := diagnose.batch_verdict(ctx, row, params, prev, expected, draws):
            raise Fail(head, detail, peers, hint=("p08", 1, "q7"), where=f"{ctx.sampler_name}.sample")
        mistake = diagnose.matching_mistake(ctx, counts, draws, row, params, prev)
        if mistake:
            raise Fail(head, detail, ctx.t(f"抽样结果正好符合这种错误：{mistake}", f"the draws fit exactly this mistake: {mistake}"),
                       hint=hint, where=f"{ctx.sampler_name}.sample")
    raise Fail(head, detail, hint=hint, where=f"{ctx.sampler_name}.sample")


@check("E2.temperature", "温度表与 top_k=2 的经验分布", "the temperature table and top_k=2, drawn",
       hint=("p08", 1, "e2"))
def e2_temperatures_drawn(ctx):
    settings = [dict(temperature=0.5), dict(temperature=2.0), dict(top_k=2)]
    draws = 3000
    counts = draw_many(ctx, settings, draws, LOG_PROBS, first_seed=1000)
    for kwargs, c in zip(settings, counts):
        expected = oracle.filtered_probs(LOG_PROBS, **kwargs)
        expect_distribution(ctx, f"sample(log {PROBS}, {kwargs})", c, expected, draws, ("p08", 1, "e2"),
                            case=(LOG_PROBS, ctx.params(**kwargs), []))


def crashes_with_top_k_on_default(ctx) -> bool:
    """Does the same call with the default params (top-k and top-p off as -1 and 1) raise too? Then the crash is not
    about what 'off' means."""
    try:
        ctx.sample(ctx.sampler(), ctx.tensor([LOG_PROBS]), ["r"], [ctx.params(seed=1)], [[]])
    except RAISE_AS_IS:
        raise
    except Exception:  # noqa: BLE001 - any crash of the plain call
        return True
    return False


@check("E2.off", "sample() 里的“关闭”：top_k = 0、-2、V、V+5 与 top_p = 1 都不过滤；top_p = 0.99 要过滤", "'off' inside sample(): top_k = 0, -2, V, "
       "V+5 and top_p = 1 filter nothing; top_p = 0.99 does", hint=("p08", 1, "q5"))
def e2_off_values_drawn(ctx):
    settings = [dict(top_k=0), dict(top_k=-2), dict(top_k=4), dict(top_k=9), dict(top_p=1.0)]
    for kwargs in settings:                                     # an 'off' value that crashes sample(): say what off means
        try:
            ctx.sample(ctx.sampler(), ctx.tensor([LOG_PROBS]), ["r"], [ctx.params(seed=1, **kwargs)], [[]])
        except Exception as exc:  # noqa: BLE001 - the crash is reported as it is, with what 'off' means
            if isinstance(exc, RAISE_AS_IS) or crashes_with_top_k_on_default(ctx):
                raise                                   # not about 'off': the crash itself, at the line that raised
            raise Fail(ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample(log {PROBS}, {kwargs}) " + ctx.t("抛出", "raised")
                       + f" {type(exc).__name__}: {str(exc)[:100]}",
                       ctx.t("只有 0 < top_k < V 时 top-k 才打开；-1、0、其他负数和 >= V 都表示关闭", "top-k is on only when "
                             "0 < top_k < V: -1, 0, any other negative value and >= V mean off"),
                       hint=("p08", 1, "q5"), where=f"{ctx.sampler_name}.sample") from None
    draws = 600
    counts = draw_many(ctx, settings, draws, LOG_PROBS, first_seed=3000)
    for kwargs, c in zip(settings, counts):
        label = f"sample(log {PROBS}, {kwargs})"
        if c[0] == draws and "top_k" in kwargs:                  # only the maximum: the row was cut to one token
            every = ctx.t(f"{label}：抽 {draws} 次 -> 每次都是 token 0", f"{label}: {draws} draws -> token 0 every time")
            diagnose.earlier_step_first(ctx, every, [(LOG_PROBS, ctx.params(**kwargs), [])])
            raise Fail(every + ctx.t(f"，期望频率 {fmt_vec(PROBS)}", f", expected frequencies {fmt_vec(PROBS)}"),
                       ctx.t(f"top_k = {kwargs['top_k']} 在 sample() 里被当成了 top_k = 1：-1、0、其他负数和 >= V 都表示关闭"
                             + ("（你的 apply_top_k 单独是对的）" if ctx.has_functions else ""),
                             f"sample() treats top_k = {kwargs['top_k']} as top_k = 1: -1, 0, other negatives and >= V all mean off"
                             + (" (your apply_top_k alone gets it right)" if ctx.has_functions else "")),
                       hint=("p08", 1, "q5"), where=f"{ctx.sampler_name}.sample")
        expect_distribution(ctx, label, c, PROBS, draws, ("p08", 1, "q5"), case=(LOG_PROBS, ctx.params(**kwargs), []))
    near_one = draw_many(ctx, [dict(top_p=0.99)], 3000, TAIL_ROW, first_seed=3600)[0]   # token 3 p = 0.009 if kept
    if near_one[3]:
        observed = ctx.t(f"sample(log [0.5, 0.3, 0.191, 0.009], top_p=0.99)：抽 3000 次 -> token 3 出现 {near_one[3]} 次，"
                         f"期望一次也没有（它之前的质量是 0.991 >= 0.99）",
                         f"sample(log [0.5, 0.3, 0.191, 0.009], top_p=0.99): 3000 draws -> token 3 {near_one[3]} times, "
                         f"expected never (the mass before it is 0.991 >= 0.99)")
        diagnose.earlier_step_first(ctx, observed, [(TAIL_ROW, ctx.params(top_p=0.99), [])], filters=True)
        raise Fail(observed, ctx.t("top_p = 0.99 也是打开的：只有 top_p = 1 表示关闭", "top_p = 0.99 is on too: only top_p = 1 "
                                   "means off"), hint=("p08", 1, "q4"), where=f"{ctx.sampler_name}.sample")


# ---- E3 ----------------------------------------------------------------------------------------------
E3_ROW = [1.0, 0.5, 0.0, -0.5, 0.2, 0.9]


def _follows_global_rng(draw) -> bool:
    """Do a fresh sampler's draws repeat after torch.manual_seed(1) and change after torch.manual_seed(2)?"""
    state = torch.get_rng_state()
    try:
        seeded = []
        for seed in (1, 1, 2):
            torch.manual_seed(seed)
            seeded.append(draw())
        return seeded[0] == seeded[1] != seeded[2]
    finally:
        torch.set_rng_state(state)


@check("E3", "单独 vs 混合：seed=7 的请求 q", "alone vs mixed: request q with seed 7",
       hint=("p08", 1, "e3"))
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
            why = (ctx.t("第二个 sampler 的第一步就不同，那时还没有同伴：q 的 token 跟着 torch 的全局随机状态走（torch.manual_seed "
                         "决定它们，seed=7 不决定）：用这个请求自己的 torch.Generator 抽（generator=...）",
                         "the second sampler differs at step 0, before any peer: q's tokens follow torch's global random state "
                         "(torch.manual_seed decides them, seed=7 does not): draw with the request's own torch.Generator "
                         "(generator=...)") if _follows_global_rng(lambda: run(ctx.sampler(), 6, with_peers=False)) else
                   ctx.t("第二个 sampler 的第一步就不同，那时还没有同伴：generator 存在类属性或模块全局变量里，被所有 sampler 共用",
                         "the second sampler differs at step 0, before any peer: the generators live in a class attribute "
                         "or a module-level variable, shared by all samplers"))
            raise Fail(ctx.t(f"q（seed=7）单独：{alone}；在第二个 {ctx.sampler_name} 里：{mixed}；第 0 步就不同，那时 q 是单独的",
                             f"q (seed=7) alone: {alone}; in a second {ctx.sampler_name}: {mixed}; they differ at step 0, "
                             f"where q is alone"),
                       why, diagnose.fix_first_line(ctx, "I5"), hint=("p08", 1, "q6"), where=f"{ctx.sampler_name}.sample")
        observed = ctx.t(f"q（seed=7）单独：{alone}；混合：{mixed}；第一次不同在第 {step} 步，batch {batches[step]}",
                         f"q (seed=7) alone: {alone}; mixed: {mixed}; first difference at step {step}, batch {batches[step]}")
        diagnose.earlier_step_first(ctx, observed)                                       # e.g. the output's order
        raise Fail(observed, diagnose.peer_verdict(ctx, E3_ROW, 7), hint=("p08", 1, "q7"), where=f"{ctx.sampler_name}.sample")
    sampler.free("q")
    replay = run(sampler, 3, with_peers=False)
    if replay != alone[:3]:
        raise Fail(ctx.t(f"free('q')，然后 q（seed=7）再跑 3 步 -> {replay}，期望重放前 3 个 {alone[:3]}",
                         f"free('q'), then q (seed=7) again for 3 steps -> {replay}, expected the first 3 again {alone[:3]}"),
                   ctx.t("free 之后同名请求要从头开始新的随机流", "after free, a request reusing the id must start a fresh stream"),
                   hint=("p08", 1, "q6"), where=f"{ctx.sampler_name}.free")


# ---- E2.small_t -------------------------------------------------------------------------------------
SHAPE = [0.0, -1.0, -2.0, -3.0, -4.0, -6.0]       # row = SHAPE * T, so at the right T the probs are softmax(SHAPE)


@check("E2.small_t", "小温度（1e-4 … 0.3）按原值使用，不截断", "small temperatures (1e-4 ... 0.3) are used exactly, not clamped",
       hint=("p08", 2, "s3"))
def e2_small_temperatures_exact(ctx):
    draws, expected = 1200, oracle.softmax(SHAPE)
    temperatures = (1e-4, 1e-3, 0.01, 0.05, 0.3)
    rows = [[v * t for v in SHAPE] for t in temperatures]
    counts = [counts_of(draws_of(ctx, torch.tensor(row), draws, 7000 + i * draws, chunk=draws, temperature=t), 6)
              for i, (t, row) in enumerate(zip(temperatures, rows))]
    bad = [i for i, c in enumerate(counts) if oracle.sigma_violations(c, expected, draws)]
    if not bad:
        return
    i, temperature = bad[0], temperatures[bad[0]]
    shown = ', '.join(f'{v:.3g}' for v in rows[i])
    freqs = fmt_vec([c / draws for c in counts[i]])
    observed = ctx.t(f"调用 {ctx.sampler_name}.sample([{shown}], temperature={temperature})，{draws} 个 seed -> 频率 {freqs}，"
                     f"期望 {fmt_vec(expected)}", f"called {ctx.sampler_name}.sample([{shown}], temperature={temperature}) "
                     f"for {draws} seeds -> frequencies {freqs}, expected {fmt_vec(expected)}")
    diagnose.earlier_step_first(ctx, observed, [(rows[i], ctx.params(temperature=temperature), [])], stream=True)
    hypotheses = [(ctx.t("温度没有被用上（抽样符合 T = 1）", "the temperature is not used (the draws fit T = 1)"), lambda t: 1.0)]
    hypotheses += [(ctx.t(f"温度被截到了至少 {floor}：按原值用，不要 max(T, …)", f"the temperature is clamped up to {floor}: "
                          f"use it as given, no max(T, ...)"), lambda t, floor=floor: max(t, floor))
                   for floor in (1e-3, 0.01, 0.05, 0.1, 0.5)]
    fitting = [label for label, effective in hypotheses
               if all(worst_z(c, oracle.softmax([v / effective(t) for v in row]), draws) <= 6.0
                      for t, row, c in zip(temperatures, rows, counts))]
    why = [ctx.t(f"五个温度的抽样都符合这一种错误：{fitting[0]}", f"the draws at all five temperatures fit one mistake: "
                 f"{fitting[0]}")] if len(fitting) == 1 else []
    raise Fail(observed, *why, where=f"{ctx.sampler_name}.sample")
