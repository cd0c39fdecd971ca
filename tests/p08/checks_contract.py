"""Acceptance checks on the sampler's contract: fp32 for low-precision input (S0), the output (S6),
and the order of the steps (S1-5)."""
import math

import torch

from course import oracle
from course.grader.checks import Fail, check
from tests.p08.context import params_text
from tests.p08 import diagnose
from tests.p08.checks_examples import LOG_PROBS, kept_ids



# ---- S0 ----------------------------------------------------------------------------------------------
# Rows (exact in bf16 / fp16) whose top token's fp32 probability p0 lies a hair from top_p, while the
# nearest low-precision value of p0 lies on the other side: computed in fp32 the keep set is one thing,
# computed in bf16/fp16 it is another. Each row: (logits, top_p, tokens allowed in fp32).
S0_CASES = {
    torch.bfloat16: [([0.703125, 0.177734375, -2.234375], 0.608764, {0, 1}),
                     ([0.82421875, 0.515625, -0.058837890625], 0.465197, {0}),
                     ([1.2265625, 0.94921875, -0.416015625], 0.512102, {0})],
    torch.float16: [([0.89990234375, 0.354736328125, -1.556640625], 0.600507, {0, 1}),
                    ([0.68115234375, 0.4150390625, -1.888671875], 0.542552, {0}),
                    ([1.35546875, 1.1552734375, -0.60693359375], 0.510347, {0})],
}


@check("S0", "bf16/fp16 的 logits 按 fp32 计算", "bf16/fp16 logits are computed in fp32", hint=("p08", 1, "d0"))
def s0_low_precision_logits_in_fp32(ctx):
    for dtype in (torch.bfloat16, torch.float16):
        for row, top_p, allowed in S0_CASES[dtype]:
            logits = ctx.tensor([row], dtype=dtype)
            params = ctx.params(top_p=top_p, seed=17)
            expected = oracle.filtered_probs([float(v) for v in logits[0].tolist()], top_p=top_p)
            sampler, seen = ctx.sampler(), set()
            for _ in range(60):
                seen |= set(ctx.sample(sampler, logits, ["r"], [params], [[]]))
            if seen != allowed:
                shown, fp32 = ', '.join(f'{v:.6g}' for v in logits[0].tolist()), [round(p, 5) for p in expected]
                observed = ctx.t(f"调用 {ctx.sampler_name}.sample([{shown}] {str(dtype)[6:]}, top_p={top_p}) 60 次 -> tokens "
                                 f"{sorted(seen)}，期望 {sorted(allowed)}（fp32 的概率 {fp32}）",
                                 f"called {ctx.sampler_name}.sample([{shown}] {str(dtype)[6:]}, top_p={top_p}) 60 times -> "
                                 f"tokens {sorted(seen)}, expected {sorted(allowed)} (fp32 probabilities {fp32})")
                as_fp32, fp32_sampler = ctx.tensor([[float(v) for v in logits[0].tolist()]]), ctx.sampler()
                seen32 = set()
                for _ in range(60):
                    seen32 |= set(ctx.sample(fp32_sampler, as_fp32, ["r"], [params], [[]]))
                if seen32 != allowed:                  # wrong in fp32 too: the input's dtype is not it
                    diagnose.earlier_step_first(ctx, observed, [(as_fp32[0].tolist(), params, [])], stream=True,
                                                filters=True)
                    fp32_also_wrong(ctx, observed, as_fp32[0], top_p, allowed, seen32)
                raise Fail(observed, ctx.t("同一行直接给 fp32 是对的：在 fp32 里算 softmax/cumsum（logits[i].float()）；bf16 的舍入会改变 top-p 的保留集合",
                                           "the same row given in fp32 is right: do softmax/cumsum in fp32 (logits[i].float()); "
                                           "bf16 rounding changes the top-p keep set"),
                           where=f"{ctx.sampler_name}.sample")
    for dtype in (torch.bfloat16, torch.float16):
        temperature_kept_exact(ctx, dtype)


def fp32_also_wrong(ctx, observed, row, top_p, allowed, seen32):
    """S0's row is wrong in fp32 too. Its cut is a hair from top_p, so a sum that is not exact to that margin (a
    float16 cumsum inside top-p, say) moves it: say so with the margin, and whether apply_top_p alone does it."""
    probs = torch.softmax(row.double().cpu(), -1).tolist()
    order = sorted(range(len(probs)), key=lambda t: -probs[t])
    befores = [sum(probs[t] for t in order[:rank]) for rank in range(1, len(order))]
    rank = min(range(len(befores)), key=lambda r: abs(befores[r] - top_p)) + 1    # the cut nearest to top_p
    before = befores[rank - 1]
    margin = ctx.t(f"排第 {rank + 1} 的 token（id {order[rank]}）之前的概率和是 {before:.6f}，离 top_p = {top_p} 只有 "
                   f"{abs(before - top_p):.1e}", f"the mass before the token ranked {rank + 1} (id {order[rank]}) is {before:.6f}, "
                   f"{abs(before - top_p):.1e} from top_p = {top_p}")
    if ctx.has_functions:
        def kept_by(values, p):
            return kept_ids(ctx.vector("apply_top_p", values, p))
        kept = kept_by(row.clone(), top_p)
        clear = ctx.tensor(LOG_PROBS)                                          # cuts far from top_p
        if kept != allowed and (kept_by(clear, 0.7), kept_by(clear, 0.9)) != ({0, 1}, {0, 1, 2}):
            raise Fail(observed, ctx.t("你的 apply_top_p 在远离阈值的行上也不对（log [0.5, 0.25, 0.15, 0.1]，top_p 0.7 / 0.9）：先修好 E2.top_p",
                                       "your apply_top_p is wrong on a row whose cuts are far from top_p too (log [0.5, 0.25, "
                                       "0.15, 0.1], top_p 0.7 / 0.9): fix E2.top_p first"), hint=("p08", 1, "q4"), where="apply_top_p")
        if kept != allowed:
            raise Fail(observed, ctx.t(f"你的 apply_top_p 单独处理这行 fp32 也保留 {sorted(kept)}，期望 {sorted(allowed)}：{margin}；"
                                       f"离阈值远的情形它是对的，所以是它的求和不够精确：softmax 和 cumsum 都要在 fp32 里做（不要 .half()/bfloat16）",
                                       f"your apply_top_p alone keeps {sorted(kept)} of this row in fp32, expected {sorted(allowed)}: "
                                       f"{margin}; it is right where the cuts are far from top_p, so its sums are not exact enough: "
                                       f"do the softmax and the cumsum in fp32 (no .half() or bfloat16 inside)"),
                       hint=("p08", 2, "s5"), where="apply_top_p")
    raise Fail(observed, ctx.t(f"同一行直接给 fp32 也得到 {sorted(seen32)}：{margin}；sample() 里 top-p 的求和要精确到这个量级（在 fp32 里做）",
                               f"the same row given in fp32 also gives {sorted(seen32)}: {margin}; the top-p sums inside "
                               f"sample() must be exact to that (do them in fp32)"),
               hint=("p08", 2, "s5"), where=f"{ctx.sampler_name}.sample")


# A temperature rounded to the logits' dtype (0.7 -> 0.69921875 in bf16, 0.7001953125 in fp16) moves the top token's
# probability p0 of the row [1, 0] by 2e-4 (bf16) or 6e-5 (fp16); top_p sits halfway, so the exact temperature and
# the rounded one keep different sets (fp32 rounding is ~1e-7). T = 1 in the cases above is exact in any dtype.
S0_TEMPERATURE, S0_ROW, S0_DRAWS = 0.7, [1.0, 0.0], 200      # P(a correct sampler never draws token 1) < 1e-18


def _p0(temperature: float) -> float:
    return 1.0 / (1.0 + math.exp(-(S0_ROW[0] - S0_ROW[1]) / temperature))


def temperature_kept_exact(ctx, dtype):
    rounded = float(torch.tensor(S0_TEMPERATURE, dtype=dtype))
    top_p = round((_p0(S0_TEMPERATURE) + _p0(rounded)) / 2, 7)
    allowed = {0, 1} if _p0(S0_TEMPERATURE) < top_p else {0}                       # mass before token 1 is p0

    def seen_with(logits):
        ids = [f"t{n}" for n in range(S0_DRAWS)]
        params = [ctx.params(temperature=S0_TEMPERATURE, top_p=top_p, seed=900 + n) for n in range(S0_DRAWS)]
        return set(ctx.sample(ctx.sampler(), logits.expand(S0_DRAWS, -1).contiguous(), ids, params,
                              [[] for _ in ids]))

    seen = seen_with(ctx.tensor([S0_ROW], dtype=dtype))
    if seen == allowed:
        return
    name = str(dtype)[6:]
    p_right, p_rounded = f"{_p0(S0_TEMPERATURE):.6f}", f"{_p0(rounded):.6f}"
    observed = ctx.t(f"调用 {ctx.sampler_name}.sample([1, 0] {name} x {S0_DRAWS} 行, temperature={S0_TEMPERATURE}, "
                     f"top_p={top_p}) -> tokens {sorted(seen)}，期望 {sorted(allowed)}（T = {S0_TEMPERATURE} 时 p0 = {p_right}，"
                     f"T = {rounded} 时 {p_rounded}）",
                     f"called {ctx.sampler_name}.sample([1, 0] {name} x {S0_DRAWS} rows, temperature={S0_TEMPERATURE}, "
                     f"top_p={top_p}) -> tokens {sorted(seen)}, expected {sorted(allowed)} (p0 = {p_right} at "
                     f"T = {S0_TEMPERATURE}, {p_rounded} at T = {rounded})")
    seen32 = seen_with(ctx.tensor([S0_ROW]))
    if seen32 != allowed:                                   # wrong in fp32 too: the temperature's dtype is not it
        diagnose.earlier_step_first(ctx, observed, [(S0_ROW, ctx.params(temperature=S0_TEMPERATURE, top_p=top_p), [])],
                                    stream=True, filters=True)
        raise Fail(observed, ctx.t(f"同一行给 fp32 也得到 {sorted(seen32)}", f"the same row given in fp32 also gives {sorted(seen32)}"),
                   hint=("p08", 2, "s5"), where=f"{ctx.sampler_name}.sample")
    raise Fail(observed, ctx.t(f"同一行给 fp32 是对的；{name} 的结果像是除以了 T = {rounded}（{S0_TEMPERATURE} 舍入到 {name}）："
                               f"用 Python float（或 fp32）的温度去除 fp32 的行，不要用 logits 的 dtype",
                               f"the same row given in fp32 is right; in {name} the draws fit T = {rounded} ({S0_TEMPERATURE} "
                               f"rounded to {name}): divide the fp32 row by the temperature as a Python float (or fp32), "
                               f"never as a tensor of the logits' dtype"),
               hint=("p08", 1, "d0"), where=f"{ctx.sampler_name}.sample")


# ---- S6 ----------------------------------------------------------------------------------------------
@check("S6", "输出：LongTensor [B]，在 logits 的设备上，按 req_ids 的顺序", "output: LongTensor [B] on the logits' device, in req_ids order",
       hint=("p08", 1, "d6"))
def s6_output_contract(ctx):
    ids = ["zeta", 7, "alpha", ("tuple", 1), "m"]
    rows, expected = [], []
    for i in range(len(ids)):
        target = (3 * i + 2) % 8
        rows.append([5.0 if j == target else -2.0 - 0.1 * j for j in range(8)])
        expected.append(target)
    logits = ctx.tensor(rows)
    params = [ctx.params(temperature=0.0), ctx.params(top_k=1, seed=3), ctx.params(),
              ctx.params(top_p=1e-6, seed=9), ctx.params(temperature=1e-7, repetition_penalty=1.1)]
    got = ctx.sample(ctx.sampler(), logits, ids, params, [[], [], [], [], [1]])
    if got != expected:
        observed = ctx.t(f"调用 {ctx.sampler_name}.sample(5 行, req_ids={ids}) -> {got}，期望 {expected}",
                         f"called {ctx.sampler_name}.sample(5 rows, req_ids={ids}) -> {got}, expected {expected}")
        if sorted(got) == sorted(expected):
            raise Fail(observed, ctx.t("每个 token 都对，但顺序变了：第 i 个输出属于 req_ids[i]（别按 id 排序）",
                                       "every token is right but the order is not: output i belongs to req_ids[i] (do not sort by id)"),
                       where=f"{ctx.sampler_name}.sample")
        diagnose.earlier_step_first(ctx, observed, [(rows[i], params[i], prev) for i, prev in enumerate([[], [], [], [], [1]])],
                                    greedy=True)
        raise Fail(observed, ctx.t("第 i 个输出属于 req_ids[i]（别按 id 排序，别丢行）", "output i belongs to req_ids[i] (do not sort by id, do not drop rows)"),
                   where=f"{ctx.sampler_name}.sample")
    one = ctx.sample(ctx.sampler(), ctx.tensor([rows[0]]), ["solo"], [ctx.params(temperature=0.0)], [[]])
    if one != [expected[0]]:
        raise Fail(ctx.t(f"调用 {ctx.sampler_name}.sample(1 行) -> {one}，期望 {[expected[0]]}",
                         f"called {ctx.sampler_name}.sample(1 row) -> {one}, expected {[expected[0]]}"), where=f"{ctx.sampler_name}.sample")


# ---- S1-5 --------------------------------------------------------------------------------------------
ORDER_CASES = [
    # probs-or-logits row, params, prev, what goes wrong when the order is wrong, hint anchor
    ([3.0, 2.9, 1.0], dict(top_k=1, repetition_penalty=2.0, seed=31), [0],
     ("penalty 必须在 top-k 之前：罚后 token 0 = 1.5 < 2.9", "penalise before top-k: token 0 becomes 1.5 < 2.9"), ("p08", 2, "s1")),
    ([math.log(p) for p in (0.4, 0.3, 0.2, 0.1)], dict(top_k=2, top_p=0.55, seed=32), [],
     ("top-p 要在 top-k 之后、在重新归一化的分布上做：[0.571, 0.429] 里 token 1 之前已有 0.571 ≥ 0.55",
      "top-p works on the distribution left after top-k: in [0.571, 0.429] token 1 has 0.571 >= 0.55 before it"), ("p08", 2, "s5")),
    ([math.log(p) for p in (0.5, 0.25, 0.15, 0.1)], dict(temperature=2.0, top_p=0.45, seed=33), [],
     ("温度要在 top-p 之前：T=2 时概率是 [0.370, 0.262, ...]，token 1 之前只有 0.370 < 0.45，要保留",
      "temperature comes before top-p: at T=2 the probs are [0.370, 0.262, ...], 0.370 < 0.45 before token 1, so it stays"),
     ("p08", 2, "s3")),
    ([math.log(p) for p in (0.6, 0.35, 0.05)], dict(temperature=0.5, top_p=0.7, seed=34), [],
     ("温度要在 top-p 之前：T=0.5 时概率是 [0.742, 0.253, 0.005]，token 1 之前已有 0.742 ≥ 0.7",
      "temperature comes before top-p: at T=0.5 the probs are [0.742, 0.253, 0.005], 0.742 >= 0.7 before token 1"),
     ("p08", 2, "s3")),
]


@check("S1-5", "五个步骤的顺序：penalty → greedy → 温度 → top-k → top-p", "the order of the steps: penalty, greedy, temperature, top-k, top-p",
       hint=("p08", 2, "s1"))
def s_order_of_steps(ctx):
    draws = 80
    for row, kwargs, prev, why, hint in ORDER_CASES:
        params = ctx.params(**kwargs)
        expected = oracle.probs_for(row, params, prev)
        allowed = oracle.kept(expected)
        sampler, seen, history = ctx.sampler(), set(), list(prev)   # a file that edits its prev_tokens edits a copy
        for _ in range(draws):
            seen |= set(ctx.sample(sampler, ctx.tensor([row]), ["r"], [params], [history]))
        if seen != allowed:
            shown = ', '.join(f'{v:.3f}' for v in row)
            observed = ctx.t(f"调用 {ctx.sampler_name}.sample([{shown}], {params_text(params)}, prev_tokens={prev}) {draws} 次 -> "
                             f"tokens {sorted(seen)}，期望 {sorted(allowed)}",
                             f"called {ctx.sampler_name}.sample([{shown}], {params_text(params)}, prev_tokens={prev}) {draws} "
                             f"times -> tokens {sorted(seen)}, expected {sorted(allowed)}")
            diagnose.earlier_step_first(ctx, observed, [(row, params, prev)], stream=True,
                                        temperature=params.temperature != 1.0, penalty=params.repetition_penalty != 1.0,
                                        filters=True, order=False)
            orders = [(kept_set_in_order(row, params, prev, steps), label) for steps, label in WRONG_ORDERS]
            matches = [ctx.t(*label) for s, label in orders if s == seen]
            if matches:
                raise Fail(observed, ctx.t(f"你的每一步单独都对；这正是这种顺序得到的集合：{' / '.join(matches)}。",
                                           f"each of your steps is right on its own; that is the set you get with: "
                                           f"{' / '.join(matches)}. ") + ctx.t(*why), hint=hint, where=f"{ctx.sampler_name}.sample")
            raise Fail(observed, ctx.t("你的每一步单独都对，但 sample() 组合它们的方式不对：顺序是 penalty → greedy → 温度 → top-k → top-p",
                                       "each of your steps is right on its own, but sample() combines them wrongly: the order is "
                                       "penalty -> greedy -> temperature -> top-k -> top-p"),
                       hint=hint, where=f"{ctx.sampler_name}.sample")


WRONG_ORDERS = [  # (steps in the order a sampler might run them, (zh, en))
    (("top_k", "penalty", "temperature", "top_p"), ("top-k 在 penalty 之前", "top-k before the penalty")),
    (("penalty", "temperature", "top_p", "top_k"), ("top-p 在 top-k 之前", "top-p before top-k")),
    (("penalty", "top_k", "top_p", "temperature"), ("温度在 top-k/top-p 之后", "the temperature after top-k/top-p")),
    (("penalty", "temperature", "top_k", "top_p_raw"), ("top-p 用的是 top-k 之前的分布", "top-p on the distribution before top-k")),
]


def kept_set_in_order(row, params, prev, order):
    """The kept set when the steps run in `order` (the oracle's pieces), e.g. top-p before top-k."""
    values, original = list(row), None
    for step in order:
        if step == "penalty":
            values = oracle.penalize(values, prev, params.repetition_penalty)
        elif step == "temperature":
            values = [v / params.temperature for v in values]
        elif step == "top_k":
            original = values
            values = oracle.top_k_filter(values, params.top_k)
        elif step == "top_p":
            values = oracle.top_p_filter(values, params.top_p)
        else:                                        # top_p decided on the values before top-k, applied after it
            decided = oracle.top_p_filter(original, params.top_p)
            values = [v if d != float("-inf") else d for v, d in zip(values, decided)]
    return oracle.kept(oracle.softmax(values))
