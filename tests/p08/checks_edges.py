"""Acceptance checks at the edges of the rule, through sample(): the penalty in a real batch, the greedy
threshold, small temperatures, and real vocabulary sizes. Each failure names a cause it has established."""
import torch

from course import oracle
from course.grader.checks import RAISE_AS_IS, Fail, check, fmt_vec, params_text
from tests.p08 import diagnose
from tests.p08.draws import counts_of, draws_of, runs, worst_z

BOTH = ("p08", "p08-fast")


# ---- E1.history -------------------------------------------------------------------------------------
def row_with(top, vocab=32):
    """A row of low logits [V] with the given {token: value} on top."""
    values = [-3.0 - 0.01 * j for j in range(vocab)]
    for token, value in top.items():
        values[token] = value
    return values


def history_rows():
    """(label, row, prev, penalty, expected token, the token the case is about), one clear answer each."""
    long_history = [3] + [8 + i % 20 for i in range(2000)]
    return [
        ("history [5, 6, 7] holds no token 0", row_with({0: 2.0, 1: 1.9}), [5, 6, 7], 1.5, 0, None),
        ("empty history", row_with({31: 2.0, 30: 1.9}), [], 1.5, 31, None),
        ("token 3 seen once, 2000 tokens ago", row_with({3: 2.0, 4: 1.9}), long_history, 1.5, 4, 3),
        ("token 6 seen once, last of 2000", row_with({6: 2.0, 7: 1.9}), long_history[1:] + [6], 1.5, 7, 6),
        ("penalty 0.5 < 1 raises a positive logit", row_with({1: 1.0, 2: 0.6}), [2], 0.5, 2, 2),
        ("penalty 0.5 < 1 on a negative logit", row_with({0: -0.5, 1: -0.4}), [0], 0.5, 0, 0),
        ("history [1, 1, 1, 2]", row_with({1: 2.0, 2: 1.0, 5: 1.2}), [1, 1, 1, 2], 1.5, 1, 1),
    ]


def why_row_is_wrong(ctx, case, mode):
    """The established reason a row of E1.history came out wrong, by re-running it in smaller settings."""
    label, row, prev, pen, want, key = case
    solo = lambda values, history, penalty: ctx.sample(                          # noqa: E731
        ctx.sampler(), ctx.tensor([values]), ["solo"], [ctx.params(repetition_penalty=penalty, **mode)], [list(history)])
    if solo(row, prev, pen) == [want]:
        return ctx.t("这一行单独采样是对的，和其他历史更长的行放在一起就错了：各行的历史混在一起了，或者补齐(pad)用的 id 也被惩罚了",
                     "this row alone is right, but wrong beside rows with longer histories: the histories are mixed "
                     "between rows, or the id used to pad them is penalised too")
    if key is not None and len(prev) > 1 and solo(row, [key], pen) == [want]:
        if len(prev) > 100:
            return ctx.t(f"历史只有 [{key}] 时是对的，{len(prev)} 个 token 的历史就错了：整个历史都算，从第一个到最后一个",
                         f"with the history [{key}] it is right, with {len(prev)} tokens it is wrong: the whole history "
                         f"counts, from its first token to its last")
        return ctx.t("历史只有一个 token 时是对的，有重复时就错了：每个不同的 token 只罚一次", "right with a one-token history, "
                     "wrong with repeats: each distinct token is penalised once")
    if solo(row_with({0: 2.0, 1: 1.9}), [0], 2.0) != [1]:
        if "temperature" in mode:
            return ctx.t("greedy 行完全没有被惩罚：penalty 要在 greedy 判断之前", "greedy rows are not penalised at all: "
                         "the penalty comes before the greedy test")
        return ctx.t("sample() 没有按 prev_tokens[i] 对第 i 行做 penalty", "sample() does not penalise row i with prev_tokens[i]")
    if pen < 1:
        return ctx.t("penalty 2 是对的，penalty 0.5 就错了：penalty < 1 也用同一条规则，正数 v / p，负数 v * p",
                     "penalty 2 is right, penalty 0.5 is not: penalty < 1 follows the same rule, positive v / p, negative v * p")
    return None


LOW_PRECISION_ROWS = [  # penalty 1.3 on token 0 = 3.0: fp32 gives 2.3077 < token 1; in bf16/fp16 it rounds up to a tie
    (torch.bfloat16, [3.0, 2.3125, -1.0, -2.0]), (torch.float16, [3.0, 2.30859375, -1.0, -2.0])]


@check("E1.history", "sample() 里的 penalty：长/不等长的历史、penalty < 1、bf16 行",
       "the penalty inside sample(): long and uneven histories, penalty < 1, bf16 rows", hint=("p08", 2, "s1"), problems=BOTH)
def e1_penalty_in_a_real_batch(ctx):
    cases = history_rows()
    for mode in (dict(temperature=0.0), dict(top_k=1, seed=5)):
        params = [ctx.params(repetition_penalty=case[3], **mode) for case in cases]
        logits = ctx.tensor([case[1] for case in cases])
        got = ctx.sample(ctx.sampler(), logits, [f"h{i}" for i in range(len(cases))], params, [list(case[2]) for case in cases])
        for i, case in enumerate(cases):
            label, row, prev, pen, want, _ = case
            if got[i] == want:
                continue
            observed = (f"called {ctx.sampler_name}.sample({len(cases)} rows, {params_text(params[i])}), row {i} ({label}) "
                        f"-> token {got[i]}, expected {want}")
            diagnose.earlier_step_first(ctx, observed, [(row, params[i], prev)], greedy="temperature" in mode,
                                        filters="top_k" in mode)
            why = why_row_is_wrong(ctx, case, mode)
            raise Fail(observed, *[w for w in [why] if w], hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
    plain = diagnose.penalty_verdict(ctx)                                  # T = 1, no filter: drawn, 300 seeds
    if plain:
        raise Fail(*plain[0], ctx.t("greedy 和 top_k=1 的行都罚对了，T = 1、没有 top-k/top-p 的行却没有：有条捷径跳过了 penalty",
                                    "greedy and top_k=1 rows are penalised right, but a T = 1 row with no top-k/top-p is not: "
                                    "a shortcut skips the penalty"),
                   hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
    for vocab, top in ((50257, 45000), (151936, 151935)):                   # ids past int16 / uint16 range
        row = torch.full((vocab,), -3.0)
        row[[top, 3]] = torch.tensor([2.0, 1.9])
        params = ctx.params(temperature=0.0, repetition_penalty=1.5)
        got = ctx.sample(ctx.sampler(), row[None].to(ctx.device), ["v"], [params], [[top, 5]])
        if got != [3]:
            observed = (f"called {ctx.sampler_name}.sample(V={vocab}, token {top} = 2.0, token 3 = 1.9, {params_text(params)}, "
                        f"prev_tokens=[[{top}, 5]]) -> {got}, expected [3]")
            diagnose.earlier_step_first(ctx, observed, [(row.tolist(), params, [top, 5])], greedy=True)
            raise Fail(observed, ctx.t(f"token {top} 罚后是 1.33 < 1.9：大的 token id 也要罚到它自己（id 别存成 int16 之类的小类型）",
                                       f"token {top} becomes 1.33 < 1.9: a large token id must hit its own token (no int16 "
                                       f"or other narrow id type)"), hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
    for dtype, row in LOW_PRECISION_ROWS:
        params = ctx.params(temperature=0.0, repetition_penalty=1.3)
        got = ctx.sample(ctx.sampler(), ctx.tensor([row], dtype=dtype), ["b"], [params], [[0]])
        if got != [1]:
            observed = (f"called {ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}] {str(dtype)[6:]}, {params_text(params)}, "
                        f"prev_tokens=[[0]]) -> {got}, expected [1]")
            if ctx.sample(ctx.sampler(), ctx.tensor([row]), ["b"], [params], [[0]]) != [1]:
                diagnose.earlier_step_first(ctx, observed, [(row, params, [0])], greedy=True)
                raise Fail(observed, hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
            raise Fail(observed, ctx.t("同一行用 fp32 输入是对的：penalty 是在低精度里算的（3.0/1.3 = 2.3077，舍入到 "
                                       f"{str(dtype)[6:]} 变成 {row[1]}，和 token 1 打平）。先 .float() 再罚",
                                       f"the same row given in fp32 is right: the penalty was computed in low precision "
                                       f"(3.0/1.3 = 2.3077 rounds to {row[1]} in {str(dtype)[6:]}, a tie with token 1). "
                                       f"Convert the row with .float() before the penalty"),
                       hint=("p08", 1, "d0"), where=f"{ctx.sampler_name}.sample")


# ---- I3.edges ---------------------------------------------------------------------------------------
GREEDY_ROWS = [("tied maxima", [2.0, 5.0, 5.0, 1.0], {1}),                     # torch.argmax: the first of equal maxima
               ("a near-tie (1 ulp apart)", [1.0, 1.0 - 2 ** -20, -5.0, -5.0], {0}),
               ("huge values (row / T overflows)", [2e35, 3e35, -1e35, 0.0], {1})]


@check("I3.edges", "greedy 的边界：T = 9e-6 配并列最大值/极大值；T = 1e-5 不是 greedy",
       "greedy edges: T = 9e-6 with ties or huge values; T = 1e-5 is not greedy", hint=("p08", 1, "q3"), problems=BOTH)
def i3_greedy_threshold_edges(ctx):
    for temperature in (0.0, 1e-6, 9e-6):
        for label, row, allowed in GREEDY_ROWS:
            params = [ctx.params(temperature=temperature, seed=s if s % 2 else None) for s in range(12)]
            logits = ctx.tensor([row] * 12)
            observed = f"called {ctx.sampler_name}.sample(12 x [{fmt_vec(row)[1:-1]}], temperature={temperature})"
            try:
                got = ctx.sample(ctx.sampler(), logits, [f"g{s}" for s in range(12)], params, [[]] * 12)
            except Exception as exc:  # noqa: BLE001 - explained when the cause is established, else re-raised
                if isinstance(exc, RAISE_AS_IS):
                    raise
                if runs(ctx, logits, temperature=1.0) and not runs(ctx, logits, temperature=temperature):
                    raise Fail(f"{observed} raised {type(exc).__name__}: {str(exc)[:100]}",
                               ctx.t("T < 1e-5 的行要直接取 argmax，不能先除以 T：row / T 溢出成 inf，softmax 得到 NaN",
                                     "a row with T < 1e-5 takes the argmax directly, before any division: row / T overflows "
                                     "to inf and softmax gives NaN"), where=f"{ctx.sampler_name}.sample") from None
                raise
            if len(set(got)) == 1 and got[0] in allowed:
                continue
            if temperature > 0 and len(set(got)) > 1:
                why = ctx.t(f"T = {temperature} < 1e-5 也是 greedy（规则是 temperature < 1e-5），不能只判断 T == 0；"
                            "greedy 的结果不随 seed 变化", f"T = {temperature} < 1e-5 is greedy too (the rule is temperature "
                            "< 1e-5), not only T == 0; a greedy row does not change with the seed")
            elif len(set(got)) == 1 and got[0] in {int((torch.tensor(row) / t).argmax()) for t in (temperature, 1e-5)}:
                why = ctx.t("结果等于这一行除以一个极小温度之后的 argmax：极大的值除出来溢出成 inf、彼此相等。greedy 要对没除过的（罚后的）行取 argmax",
                            "the result is the argmax of the row divided by a tiny temperature, where huge values overflow to "
                            "inf and tie: greedy takes the argmax of the undivided (penalised) row")
            elif len(set(got)) == 1 and row[got[0]] == max(row):
                why = ctx.t(f"token {got[0]} 也是最大值之一，但 greedy 的规则是 torch.argmax：相等的最大值取第一个（token {min(allowed)}）",
                            f"token {got[0]} ties for the maximum, but the greedy rule is torch.argmax, which returns the first "
                            f"of equal maxima (token {min(allowed)})")
            else:
                why = ctx.t(f"期望 {sorted(allowed)} 之一，并且每个请求都一样", f"expected one of {sorted(allowed)}, the same for every request")
            raise Fail(f"{observed} -> {got}", why, where=f"{ctx.sampler_name}.sample")
    tied = [2.0, 5.0, 5.0, 1.0]                                            # top_k = 1 keeps both maxima: not argmax
    drawn = set(draws_of(ctx, torch.tensor(tied), 60, 800, top_k=1))
    if drawn != {1, 2}:
        observed = f"60 draws of {ctx.sampler_name}.sample([2, 5, 5, 1], top_k=1) -> tokens {sorted(drawn)}, expected both 1 and 2"
        diagnose.earlier_step_first(ctx, observed, [(tied, ctx.params(top_k=1), [])])
        raise Fail(observed,
                   ctx.t("top_k = 1 保留所有等于最大值的 token，这不是 greedy：别用 argmax 当捷径",
                         "top_k = 1 keeps every token equal to the largest value; it is not greedy: no argmax shortcut"),
                   hint=("p08", 1, "q5"), where=f"{ctx.sampler_name}.sample")
    row = [1.0, 1.0 - 2 ** -17, -5.0, -5.0]
    for temperature in (1e-5, 2e-5):
        tokens = draws_of(ctx, torch.tensor(row), 300, 500, temperature=temperature)
        expected = oracle.filtered_probs(row, temperature=temperature)
        counts = counts_of(tokens, 4)
        if oracle.sigma_violations(counts, expected, 300):
            observed = (f"called {ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}], temperature={temperature}) for 300 seeds "
                        f"-> counts {counts}, expected frequencies {fmt_vec(expected)}")
            if counts[0] == 300:
                raise Fail(observed, ctx.t(f"T = {temperature} 不是 greedy：规则是 temperature < 1e-5（严格小于）",
                                           f"T = {temperature} is not greedy: the rule is temperature < 1e-5 (strictly less)"),
                           where=f"{ctx.sampler_name}.sample")
            diagnose.earlier_step_first(ctx, observed, [(row, ctx.params(temperature=temperature), [])], stream=True)
            raise Fail(observed, where=f"{ctx.sampler_name}.sample")


# ---- E2.small_t -------------------------------------------------------------------------------------
SHAPE = [0.0, -1.0, -2.0, -3.0, -4.0, -6.0]       # row = SHAPE * T, so at the right T the probs are softmax(SHAPE)


@check("E2.small_t", "小温度（1e-4 … 0.3）按原值使用，不截断", "small temperatures (1e-4 ... 0.3) are used exactly, not clamped",
       hint=("p08", 2, "s3"), problems=BOTH)
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
    observed = (f"called {ctx.sampler_name}.sample([{', '.join(f'{v:.3g}' for v in rows[i])}], temperature={temperature}) "
                f"for {draws} seeds -> frequencies {fmt_vec([c / draws for c in counts[i]])}, expected {fmt_vec(expected)}")
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
