"""Acceptance checks I2-I4 of the seed page: no side effects, greedy equivalents (and I3.edges: the greedy
threshold with tied maxima, near-ties and huge values), never an empty kept set."""
import copy

import torch

from course import oracle

from course.grader.checks import RAISE_AS_IS, Fail, check, fmt_vec
from tests.p08.context import params_text
from tests.p08 import diagnose
from tests.p08.draws import counts_of, draws_of, runs



# ---- I2 ----------------------------------------------------------------------------------------------
@check("I2", "无副作用：调用后输入逐位不变", "no side effects on inputs", hint=("p08", 2, "traps"))
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
                if verdict := diagnose.in_place_verdict(ctx):          # the learner's own step edits its input
                    raise diagnose.fix_first(ctx, ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample(logits [{len(rows)}, 16] "
                                             f"{str(dtype)[6:]}, ...) " + ctx.t("改了", "changed") + f" logits[{row}, {col}]", verdict)
                raise Fail(ctx.t(f"调用 {ctx.sampler_name}.sample(logits [{len(rows)}, 16] {str(dtype)[6:]}, ...) 改了 {params_text(params[row])} "
                                 f"那个请求的 logits[{row}, {col}]：{before[row, col].item():.4g} -> {part[row, col].item():.4g}",
                                 f"called {ctx.sampler_name}.sample(logits [{len(rows)}, 16] {str(dtype)[6:]}, ...) changed "
                                 f"logits[{row}, {col}] of the request with {params_text(params[row])}: "
                                 f"{before[row, col].item():.4g} -> {part[row, col].item():.4g}"),
                           ctx.t("期望：调用方的 logits 不变（logits[i].float() 在 fp32 时不复制，某条路径原地改了它，就改了调用方的张量）",
                                 "expected the caller's logits untouched (logits[i].float() does not copy an fp32 row: a path "
                                 "that edits it in place edits the caller's tensor)"),
                           where=f"{ctx.sampler_name}.sample")
            if prev != prev_before or ids != [f"x{i}" for i in rows]:
                raise Fail(ctx.t(f"调用 {ctx.sampler_name}.sample(..., prev_tokens={prev_before}) 之后 prev_tokens 变成 {prev}，req_ids {ids}",
                                 f"called {ctx.sampler_name}.sample(..., prev_tokens={prev_before}) -> prev_tokens is now {prev}, "
                                 f"req_ids {ids}"),
                           ctx.t("期望：prev_tokens 和 req_ids 不变（别原地排序或追加）", "expected prev_tokens and req_ids "
                                 "untouched (no in-place sort or append)"), where=f"{ctx.sampler_name}.sample")
    if not ctx.has_functions:
        return
    row = torch.tensor([0.3, -1.2, 2.0, 0.7, -0.1], device=ctx.device)
    for name, args in (("apply_repetition_penalty", ([0, 1, 1], 1.5)), ("apply_top_k", (2,)), ("apply_top_p", (0.5,))):
        before = row.clone()
        ctx.vector(name, row, *args)
        if not torch.equal(row, before):
            raise Fail(ctx.t(f"调用 {name}({fmt_vec(before)}, {', '.join(map(str, args))}) 之后，输入变成了 {fmt_vec(row)}",
                             f"called {name}({fmt_vec(before)}, {', '.join(map(str, args))}): the input is now {fmt_vec(row)}"),
                       ctx.t("期望：返回新张量，输入不变", "expected a new tensor back and the input unchanged"), where=name)


# ---- I3 ----------------------------------------------------------------------------------------------
@check("I3", "等价于 greedy：T<1e-5、top_k=1、极小 top_p", "greedy equivalents: T < 1e-5, top_k = 1, tiny top_p",
       hint=("p08", 1, "q3"))
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
            call = ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample(logits [4, 40], {params_text(params[0])})"
            for step in range(5):
                try:
                    got = ctx.sample(sampler, logits, ["a", "b", "c", "d"], params, [[]] * 4)
                except Exception as exc:  # noqa: BLE001 - explained when the cause is established, else re-raised
                    if isinstance(exc, RAISE_AS_IS):
                        raise
                    if kwargs.get("temperature") == 0.0 and runs(ctx, logits, temperature=1e-6):
                        raise Fail(f"{call} " + ctx.t("抛出", "raised") + f" {type(exc).__name__}: {str(exc)[:100]}",
                                   ctx.t("T = 0 时崩溃：先除以温度（x / 0 = inf，0 / 0 = NaN）再判断 greedy。先判断 T < 1e-5",
                                         "T = 0 crashes: the row is divided by the temperature (x / 0 = inf, 0 / 0 = NaN) "
                                         "before the greedy test. Test T < 1e-5 first"), hint=hint,
                                   where=f"{ctx.sampler_name}.sample") from None
                    if "top_p" in kwargs and runs(ctx, logits, top_p=0.5):
                        observed = f"{call} " + ctx.t("抛出", "raised") + f" {type(exc).__name__}: {str(exc)[:100]}"
                        diagnose.earlier_step_first(ctx, observed, [(logits[i].tolist(), params[i], []) for i in range(4)])
                        raise Fail(observed, ctx.t(f"top_p = 0.5 时不崩，top_p = {kwargs['top_p']} 时崩。再小的 top_p 也要留下概率最大的 "
                                                   "token（它之前的质量是 0）：top_p 很小时 sample() 是不是把 token 全删了？",
                                                   f"top_p = 0.5 runs, top_p = {kwargs['top_p']} crashes. A tiny top_p still keeps the most "
                                                   f"probable token (mass 0 before it): does sample() remove every token when top_p is tiny?"),
                                   hint=hint, where=f"{ctx.sampler_name}.sample") from None
                    raise
                if got != argmax:
                    observed = ctx.t(f"{call} 第 {step} 步 -> {got}，期望每行的 argmax {argmax}",
                                     f"{call} at step {step} -> {got}, expected the argmax of each row {argmax}")
                    if kwargs.get("temperature") == 0.0 and got == (logits.cpu() / 0.0).argmax(-1).tolist():
                        raise Fail(observed, ctx.t("结果正是 argmax(row / 0)：先除以温度再判断 greedy，除出来全是 ±inf",
                                                   "the result is exactly argmax(row / 0): the division by the temperature "
                                                   "comes before the greedy test, and gives ±inf"),
                                   hint=hint, where=f"{ctx.sampler_name}.sample")
                    cases = [(logits[i].tolist(), params[i], []) for i in range(4)]
                    diagnose.earlier_step_first(ctx, observed, cases if "temperature" not in kwargs or len(kwargs) > 1 else [])
                    raise Fail(observed, hint=hint, where=f"{ctx.sampler_name}.sample")


# ---- I4 ----------------------------------------------------------------------------------------------
INF = float("-inf")


@check("I4", "保留集合非空，没有 NaN（极端参数与数值）", "kept set never empty, no NaN (extreme params and values)",
       hint=("p08", 1, "q4"))
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
        call = ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}] {str(dtype)[6:]}, {params_text(params)})"
        for step in range(3):
            try:
                got = ctx.sample(sampler, logits, ["r"], [params], [[]])
            except Exception as exc:  # noqa: BLE001 - the fact (this input crashes) is stated, no cause guessed
                if isinstance(exc, RAISE_AS_IS):
                    raise
                observed = f"{call} " + ctx.t("抛出", "raised") + f" {type(exc).__name__}: {str(exc)[:100]}"
                diagnose.earlier_step_first(ctx, observed, [(row, params, [])] if dtype == torch.float32 else [])
                if dtype != torch.float32 and runs(ctx, ctx.tensor([row]), **{k: v for k, v in kwargs.items() if k != "seed"}):
                    name = str(dtype)[6:]
                    raise Fail(observed, ctx.t(f"同一行给 fp32 就能跑：{name} 的范围小（float16 最大 65504），row / temperature 或 exp "
                                               f"在 {name} 里溢出成 inf；先转 fp32（logits[i].float()）再算",
                                               f"the same row given in fp32 runs: {name}'s range is small (float16 tops out at "
                                               f"65504), so row / temperature or exp overflows to inf in {name}; convert to "
                                               f"fp32 first (logits[i].float())"),
                               hint=("p08", 1, "d0"), where=f"{ctx.sampler_name}.sample") from None
                raise Fail(observed, ctx.t("这是极端但合法的输入：至少要保留一个 token，也不能出现 NaN（注意 -inf、极大值与 0/0）",
                                           "an extreme but valid input: keep at least one token and never produce NaN "
                                           "(mind -inf, huge values and 0/0)"), where=f"{ctx.sampler_name}.sample") from None
            if got[0] not in allowed:
                observed = f"{call} -> token {got[0]}" + ctx.t(f"，期望 {sorted(allowed)} 之一", f", expected one of {sorted(allowed)}")
                diagnose.earlier_step_first(ctx, observed, [(row, params, [])] if dtype == torch.float32 else [])
                raise Fail(observed, where=f"{ctx.sampler_name}.sample")
    if ctx.has_functions:
        flat = ctx.tensor([0.5] * 6)
        for name, arg in (("apply_top_p", 1e-9), ("apply_top_k", 1)):
            out = ctx.vector(name, flat, arg)
            kept = [v for v in out.tolist() if v != INF]
            if not kept or any(v != v for v in kept):
                raise Fail(f"called {name}({fmt_vec(flat)}, {arg}) -> {fmt_vec(out)}",
                           ctx.t("期望：至少保留一个 token，且没有 NaN", "expected at least one kept token and no NaN"), where=name)


# ---- I3.edges ---------------------------------------------------------------------------------------
def filtered_kept(ctx, row, params):
    """The tokens the learner's own filtered_probs (a fast path's) gives a nonzero probability, or None without one."""
    sampler = ctx.sampler()
    if not callable(getattr(sampler, "filtered_probs", None)):
        return None
    try:
        probs = sampler.filtered_probs(ctx.tensor([row]), [params], [[]])
        return {i for i, p in enumerate(probs[0].tolist()) if p > 0}
    except Exception:  # noqa: BLE001 - a probe: without it the check states the draws alone
        return None


GREEDY_ROWS = [("tied maxima", [2.0, 5.0, 5.0, 1.0], {1}),                     # torch.argmax: the first of equal maxima
               ("three tied maxima", [1.0, 3.0, 3.0, 2.0, 3.0], {1}),         # torch.topk(x, 1) picks column 2 here
               ("a near-tie (1 ulp apart)", [1.0, 1.0 - 2 ** -20, -5.0, -5.0], {0}),
               ("huge values (row / T overflows)", [2e35, 3e35, -1e35, 0.0], {1})]


@check("I3.edges", "greedy 的边界：T = 9e-6 配并列最大值/极大值；T = 1e-5 不是 greedy",
       "greedy edges: T = 9e-6 with ties or huge values; T = 1e-5 is not greedy", hint=("p08", 1, "q3"))
def i3_greedy_threshold_edges(ctx):
    for temperature in (0.0, 1e-6, 9e-6):
        for label, row, allowed in GREEDY_ROWS:
            params = [ctx.params(temperature=temperature, seed=s if s % 2 else None) for s in range(12)]
            logits = ctx.tensor([row] * 12)
            observed = ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample(12 x [{fmt_vec(row)[1:-1]}], temperature={temperature})"
            try:
                got = ctx.sample(ctx.sampler(), logits, [f"g{s}" for s in range(12)], params, [[]] * 12)
            except Exception as exc:  # noqa: BLE001 - explained when the cause is established, else re-raised
                if isinstance(exc, RAISE_AS_IS):
                    raise
                if runs(ctx, logits, temperature=1.0) and not runs(ctx, logits, temperature=temperature):
                    raise Fail(f"{observed} " + ctx.t("抛出", "raised") + f" {type(exc).__name__}: {str(exc)[:100]}",
                               ctx.t("T < 1e-5 的行要直接取 argmax，不能先除以 T：row / T 溢出成 inf，softmax 得到 NaN",
                                     "a row with T < 1e-5 takes the argmax directly, before any division: row / T overflows "
                                     "to inf and softmax gives NaN"), where=f"{ctx.sampler_name}.sample") from None
                raise
            if len(set(got)) == 1 and got[0] in allowed:
                continue
            if temperature == 0.0:                     # a plain T = 0 row wrong too: that is I3's cause, shown there
                diagnose.earlier_step_first(ctx, f"{observed} -> {got}", greedy=True)
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
        observed = ctx.t(f"{ctx.sampler_name}.sample([2, 5, 5, 1], top_k=1) 抽 60 次 -> tokens {sorted(drawn)}，期望 1 和 2 都有",
                         f"60 draws of {ctx.sampler_name}.sample([2, 5, 5, 1], top_k=1) -> tokens {sorted(drawn)}, expected "
                         f"both 1 and 2")
        diagnose.earlier_step_first(ctx, observed, [(tied, ctx.params(top_k=1), [])])
        kept = filtered_kept(ctx, tied, ctx.params(top_k=1))
        if kept is not None and kept != {1, 2}:                  # the kept set itself drops a tie: not the draw
            raise Fail(observed, f"{ctx.sampler_name}.filtered_probs([2, 5, 5, 1], top_k=1) keeps {sorted(kept)}",
                       ctx.t("你的保留集合丢了一个和第 k 大的值相等的 token：保留所有 >= 第 k 大的值（恰好 k 列的窗口会切掉并列的）",
                             "your kept set drops a token tied with the k-th value: keep every value >= the k-th (a window "
                             "of exactly k columns cuts ties off)"), hint=("p08", 1, "q5"), where=f"{ctx.sampler_name}.sample")
        raise Fail(observed,
                   ctx.t("top_k = 1 保留所有等于最大值的 token，这不是 greedy：在保留的 token 里抽，别用 argmax 当捷径",
                         "top_k = 1 keeps every token equal to the largest value; it is not greedy: draw among the kept "
                         "tokens (an argmax picks only one of them)"),
                   hint=("p08", 1, "q5"), where=f"{ctx.sampler_name}.sample")
    row = [1.0, 1.0 - 2 ** -17, -5.0, -5.0]
    for temperature in (1e-5, 2e-5):
        tokens = draws_of(ctx, torch.tensor(row), 300, 500, temperature=temperature)
        expected = oracle.filtered_probs(row, temperature=temperature)
        counts = counts_of(tokens, 4)
        if oracle.sigma_violations(counts, expected, 300):
            observed = ctx.t(f"调用 {ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}], temperature={temperature})，300 个 seed "
                             f"-> 次数 {counts}，期望频率 {fmt_vec(expected)}",
                             f"called {ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}], temperature={temperature}) for 300 "
                             f"seeds -> counts {counts}, expected frequencies {fmt_vec(expected)}")
            if counts[0] == 300:
                raise Fail(observed, ctx.t(f"T = {temperature} 不是 greedy：规则是 temperature < 1e-5（严格小于）",
                                           f"T = {temperature} is not greedy: the rule is temperature < 1e-5 (strictly less)"),
                           where=f"{ctx.sampler_name}.sample")
            diagnose.earlier_step_first(ctx, observed, [(row, ctx.params(temperature=temperature), [])], stream=True)
            raise Fail(observed, where=f"{ctx.sampler_name}.sample")


# ---- E2.small_t -------------------------------------------------------------------------------------
