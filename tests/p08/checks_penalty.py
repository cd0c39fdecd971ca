"""Acceptance checks E1: the repetition penalty, on its own (values, distinct ids, negatives, tensor and long
histories, ids past 32767), inside sample() on a greedy row (it comes before the greedy test), and E1.history:
inside sample() with uneven histories, penalty < 1 and bf16/fp16 rows."""
import torch

from course import oracle
from course.grader.checks import RAISE_AS_IS, Fail, check, fmt_vec
from tests.p08.context import params_text
from tests.p08 import diagnose



@check("E1.penalty", "重复惩罚：数值、去重、负 logit", "repetition penalty: values, distinct ids, negative logits",
       hint=("p08", 1, "e1"))
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
        raise Fail(f"{call} -> {got}" + ctx.t("，期望 ", ", expected ") + "[3.0, -1.5, 0.5, -0.3]", *[w for w in [why] if w], hint=hint,
                   where="apply_repetition_penalty")
    row = ctx.tensor([0.5, -1.0, 0.0, 1.0, 2.0])
    out = ctx.vector("apply_repetition_penalty", row, [4, 4, 4], 2.0)
    if abs(out[4].item() - 1.0) > 1e-6:
        got = out[4].item()
        why, hint = {0.25: (ctx.t("罚了三次：历史要先去重", "penalised three times: de-duplicate the history first"), ("p08", 1, "q1")),
                     4.0: (ctx.t("正的 logit 被乘了：正数要除以 penalty", "a positive logit was multiplied: positives are divided"),
                           ("p08", 1, "q2"))}.get(round(got, 4), ("", ("p08", 1, "e1")))
        raise Fail(ctx.t("调用 ", "called ") + f"apply_repetition_penalty({fmt_vec(row)}, prev_tokens=[4, 4, 4], penalty=2) -> "
                   f"token 4 = {got:.4g}" + ctx.t("，期望 1.0（2.0 / 2，只罚一次）", ", expected 1.0 (2.0 / 2, once)"), *[w for w in [why] if w], hint=hint,
                   where="apply_repetition_penalty")
    below_one = ctx.tensor([3.0, -1.0, 0.5, -0.2])
    out = ctx.vector("apply_repetition_penalty", below_one, [0, 1], 0.5)
    if not torch.allclose(out.cpu().double(), torch.tensor([6.0, -0.5, 0.5, -0.2], dtype=torch.float64), atol=1e-5):
        raise Fail(ctx.t("调用 ", "called ") + "apply_repetition_penalty([3.0, -1.0, 0.5, -0.2], prev_tokens=[0, 1], "
                   f"penalty=0.5) -> {fmt_vec(out)}" + ctx.t("，期望 ", ", expected ") + "[6, -0.5, 0.5, -0.2]",
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
            called = (ctx.t("调用 ", "called ") + f"apply_repetition_penalty({fmt_vec(base)}, {label}) -> {fmt_vec(out)}"
                      + ctx.t("，期望 ", ", expected ") + fmt_vec(expected))
            if isinstance(prev, torch.Tensor) and torch.allclose(
                    ctx.vector("apply_repetition_penalty", base, prev.tolist(), penalty).cpu().double(),
                    torch.tensor(expected, dtype=torch.float64), atol=1e-5):
                raise Fail(called, ctx.t(f"同一段历史写成 list {prev.tolist()} 时是对的，写成张量就不对：张量形式的历史要和 list 一样处理"
                                         "（例如先 .tolist()；对张量元素取 set() 不会合并相同的 id）",
                                         f"the same history as a list {prev.tolist()} gives the right values, as a tensor it does "
                                         f"not: read a tensor history like a list (e.g. .tolist() first; a set of a tensor's "
                                         f"elements keeps equal ids apart)"), hint=("p08", 1, "q1"), where="apply_repetition_penalty")
            raise Fail(called,
                       ctx.t(f"token {wrong[0]} 的值不对", f"token {wrong[0]} is wrong") + (
                           ctx.t("：整个历史都算，从第一个 token 到最后一个", ": the whole history counts, from its first token to its last")
                           if len(prev) > 100 and wrong[0] in (0, 15) else ""),
                       where="apply_repetition_penalty")


def penalty_on_probabilities(ctx):
    """Do two greedy rows fit a penalty on the probabilities rather than the logits? [3.0, -1.0, 2.5, -0.2] keeps token
    0 that way (0.600 / 1.5 = 0.400 > 0.364), while [0.5, 0.3, -2.0] switches to token 1 (0.526 / 1.5 = 0.351 < 0.431);
    on the logits it is the other way round (2.0 < 2.5; 0.333 > 0.3), and without a penalty both keep token 0."""
    greedy = ctx.params(temperature=0.0, repetition_penalty=1.5)

    def pick(row):
        return ctx.sample(ctx.sampler(), ctx.tensor([row]), ["p"], [greedy], [[0]])

    return pick([3.0, -1.0, 2.5, -0.2]) == [0] and pick([0.5, 0.3, -2.0]) == [1]


ON_PROBABILITIES = ("两个 greedy 行都符合“penalty 罚在了概率上”：[3.0, -1.0, 2.5, -0.2] 还选 token 0（0.600/1.5 = 0.400 > 0.364），"
                    "[0.5, 0.3, -2.0] 却改选 token 1（0.526/1.5 = 0.351 < 0.431）：penalty 罚的是 logits（正数 v / p，负数 v * p），在 softmax 之前",
                    "two greedy rows fit a penalty on the probabilities: [3.0, -1.0, 2.5, -0.2] keeps token 0 (0.600/1.5 = "
                    "0.400 > 0.364) and [0.5, 0.3, -2.0] switches to token 1 (0.526/1.5 = 0.351 < 0.431): the penalty acts on "
                    "the logits (positive v / p, negative v * p), before the softmax")


@check("E1.greedy", "penalty 在 greedy 判断之前生效", "the penalty also applies to greedy rows",
       hint=("p08", 1, "q3"))
def e1_greedy_after_penalty(ctx):
    row = [3.0, -1.0, 2.5, -0.2]
    for temperature in (0.0, 1e-6):
        params = ctx.params(temperature=temperature, repetition_penalty=1.5)
        call = ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample([[3.0, -1.0, 2.5, -0.2]], ['r'], [{params_text(params)}], prev_tokens=[[0]])"
        wrong = ctx.t("，期望 [2]", ", expected [2]")
        try:
            got = ctx.sample(ctx.sampler(), ctx.tensor([row]), ["r"], [params], [[0]])
        except Exception as exc:  # noqa: BLE001 - explained below when an earlier step is the cause, else re-raised
            if isinstance(exc, RAISE_AS_IS):
                raise
            diagnose.earlier_step_first(ctx, f"{call} " + ctx.t("抛出", "raised") + f" {type(exc).__name__}", [(row, params, [0])],
                                        greedy=True)
            raise
        if got != [2]:
            diagnose.earlier_step_first(ctx, f"{call} -> {got}{wrong}", [(row, params, [0])], greedy=True)
            if penalty_on_probabilities(ctx):
                raise Fail(f"{call} -> {got}{wrong}", ctx.t(*ON_PROBABILITIES), hint=("p08", 2, "s1"),
                           where=f"{ctx.sampler_name}.sample")
            sampled = ctx.params(top_k=1, repetition_penalty=1.5, seed=3)
            if ctx.sample(ctx.sampler(), ctx.tensor([row]), ["r"], [sampled], [[0]]) != [2]:
                raise Fail(f"{call} -> {got}{wrong}",
                           ctx.t("用 top_k=1 的非 greedy 行也一样选了 token 0：sample() 根本没有用 prev_tokens[i] 做 penalty",
                                 "a non-greedy row with top_k=1 also picks token 0: sample() does not apply the penalty with "
                                 "prev_tokens[i] at all"), hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
            if ctx.has_functions:                            # p08: the learner orders the steps
                why = ctx.t("token 0 罚后 3.0/1.5 = 2.0 < 2.5，greedy 应改选 token 2；不加 penalty 的 greedy 行是对的，"
                            "所以是 penalty 放在了 greedy 判断之后：penalty 要在 greedy 判断之前",
                            "token 0 becomes 3.0/1.5 = 2.0 < 2.5, so greedy picks token 2; greedy rows without a penalty are "
                            "right, so the penalty comes after the greedy test: penalise before it")
            else:                                            # a fast path: greedy rows read a row, penalised or not
                why = ctx.t("token 0 罚后 3.0/1.5 = 2.0 < 2.5，greedy 应改选 token 2；不加 penalty 的 greedy 行是对的，"
                            "所以 greedy 行取的是没罚过的 logits 的 argmax：要取罚过之后那一行（penalized_fp32 的结果）的 argmax",
                            "token 0 becomes 3.0/1.5 = 2.0 < 2.5, so greedy picks token 2; greedy rows without a penalty are "
                            "right, so the greedy rows take the argmax of the unpenalised logits: take it of the penalised "
                            "row (what penalized_fp32 returns)")
            raise Fail(f"{call} -> {got}{wrong}", why, where=f"{ctx.sampler_name}.sample")


# ---- E2 ----------------------------------------------------------------------------------------------


# ---- E1.history -------------------------------------------------------------------------------------
def row_with(top, vocab=32):
    """A row of low logits [V] with the given {token: value} on top."""
    values = [-3.0 - 0.01 * j for j in range(vocab)]
    for token, value in top.items():
        values[token] = value
    return values


HISTORY_ZH = {  # the labels of history_rows(), in Chinese
    "history [5, 6, 7] holds no token 0": "历史 [5, 6, 7] 里没有 token 0", "empty history": "空历史",
    "token 3 seen once, 2000 tokens ago": "token 3 出现过一次，在 2000 个 token 之前",
    "token 6 seen once, last of 2000": "token 6 出现过一次，是 2000 个里的最后一个",
    "penalty 0.5 < 1 raises a positive logit": "penalty 0.5 < 1 让正的 logit 变大",
    "penalty 0.5 < 1 on a negative logit": "penalty 0.5 < 1 作用在负的 logit 上", "history [1, 1, 1, 2]": "历史 [1, 1, 1, 2]",
}


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
    if penalty_on_probabilities(ctx):
        return ctx.t(*ON_PROBABILITIES)
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
       "the penalty inside sample(): long and uneven histories, penalty < 1, bf16 rows", hint=("p08", 2, "s1"))
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
            observed = ctx.t(f"调用 {ctx.sampler_name}.sample({len(cases)} 行, {params_text(params[i])})，第 {i} 行（{HISTORY_ZH[label]}）"
                             f"-> token {got[i]}，期望 {want}",
                             f"called {ctx.sampler_name}.sample({len(cases)} rows, {params_text(params[i])}), row {i} ({label}) "
                             f"-> token {got[i]}, expected {want}")
            diagnose.earlier_step_first(ctx, observed, [(row, params[i], prev)], greedy="temperature" in mode,
                                        filters="top_k" in mode)
            why = why_row_is_wrong(ctx, case, mode)
            raise Fail(observed, *[w for w in [why] if w], hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
    plain = diagnose.penalty_verdict(ctx)                                  # T = 1, no filter: drawn, 300 seeds
    if plain:
        diagnose.earlier_step_first(ctx, plain[0][0], [([2.0, 0.0], ctx.params(repetition_penalty=10.0), [0])], stream=True)
        fits, counts, expected = diagnose.drawn_fits(ctx, [2.0, 0.0], {}, [])
        if not fits:                                                       # off without a penalty too: not the penalty
            raise Fail(*plain[0], ctx.t(f"不加 penalty 时 sample([2.0, 0.0]) 抽 300 次 -> token 0 占 {counts[0] / 300:.3f}，"
                                        f"期望 {expected[0]:.3f}", f"300 draws of sample([2.0, 0.0]) with no penalty -> token 0 "
                                        f"{counts[0] / 300:.3f} of the time, expected {expected[0]:.3f}"), ctx.t("不加 penalty 的抽样也不对：先看 I6 和 I5",
                                                                  "the draws are off without the penalty too: see I6 and I5"),
                       hint=("p08", 2, "s6"), where=f"{ctx.sampler_name}.sample")
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
            observed = (ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample(V={vocab}, token {top} = 2.0, token 3 = 1.9, "
                        f"{params_text(params)}, prev_tokens=[[{top}, 5]]) -> {got}" + ctx.t("，期望 [3]", ", expected [3]"))
            diagnose.earlier_step_first(ctx, observed, [(row.tolist(), params, [top, 5])], greedy=True)
            raise Fail(observed, ctx.t(f"token {top} 罚后是 1.33 < 1.9：大的 token id 也要罚到它自己（id 别存成 int16 之类的小类型）",
                                       f"token {top} becomes 1.33 < 1.9: a large token id must hit its own token (no int16 "
                                       f"or other narrow id type)"), hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
    for dtype, row in LOW_PRECISION_ROWS:
        params = ctx.params(temperature=0.0, repetition_penalty=1.3)
        got = ctx.sample(ctx.sampler(), ctx.tensor([row], dtype=dtype), ["b"], [params], [[0]])
        if got != [1]:
            observed = (ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample([{fmt_vec(row)[1:-1]}] {str(dtype)[6:]}, "
                        f"{params_text(params)}, prev_tokens=[[0]]) -> {got}" + ctx.t("，期望 [1]", ", expected [1]"))
            if ctx.sample(ctx.sampler(), ctx.tensor([row]), ["b"], [params], [[0]]) != [1]:
                diagnose.earlier_step_first(ctx, observed, [(row, params, [0])], greedy=True)
                raise Fail(observed, hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
            raise Fail(observed, ctx.t("同一行用 fp32 输入是对的：penalty 是在低精度里算的（3.0/1.3 = 2.3077，舍入到 "
                                       f"{str(dtype)[6:]} 变成 {row[1]}，和 token 1 打平）。先 .float() 再罚",
                                       f"the same row given in fp32 is right: the penalty was computed in low precision "
                                       f"(3.0/1.3 = 2.3077 rounds to {row[1]} in {str(dtype)[6:]}, a tie with token 1). "
                                       f"Convert the row with .float() before the penalty"),
                       hint=("p08", 1, "d0"), where=f"{ctx.sampler_name}.sample")
    history_given_each_call(ctx)


def history_given_each_call(ctx):
    """prev_tokens is the request's whole history on every call: nothing of it may be kept from an earlier call.
    Request 'h' first comes with [5], then with [5, 7, 9] (two new tokens): 7 and 9 are both penalised."""
    row, params = row_with({7: 2.0, 9: 1.95, 3: 1.9}), ctx.params(temperature=0.0, repetition_penalty=1.5)
    sampler = ctx.sampler()
    ctx.sample(sampler, ctx.tensor([row]), ["h"], [params], [[5]])
    got = ctx.sample(sampler, ctx.tensor([row]), ["h"], [params], [[5, 7, 9]])
    if got == [3]:
        return
    observed = ctx.t(f"调用 {ctx.sampler_name}.sample(token 7 = 2.0, token 9 = 1.95, token 3 = 1.9, {params_text(params)})，"
                     f"'h' 先给 prev_tokens=[[5]]，再给 [[5, 7, 9]] -> {got}，期望 [3]（7 -> 1.33，9 -> 1.3）",
                     f"called {ctx.sampler_name}.sample(token 7 = 2.0, token 9 = 1.95, token 3 = 1.9, {params_text(params)}) "
                     f"for 'h' with prev_tokens=[[5]], then again with [[5, 7, 9]] -> {got}, expected [3] (7 -> 1.33, 9 -> 1.3)")
    if ctx.sample(ctx.sampler(), ctx.tensor([row]), ["h"], [params], [[5, 7, 9]]) == [3]:
        raise Fail(observed, ctx.t("新的 sampler 一次拿到 [5, 7, 9] 是对的：sampler 记住了这个请求上一次的历史；prev_tokens 每次都是完整的历史，照原样用，不要按 req_id 缓存",
                                   "a fresh sampler given [5, 7, 9] at once is right: the sampler kept something of the request's "
                                   "history from the earlier call; prev_tokens is the whole history on every call, use it as "
                                   "given (no cache per req_id)"), hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")
    diagnose.earlier_step_first(ctx, observed, [(row, params, [5, 7, 9])], greedy=True)
    raise Fail(observed, hint=("p08", 2, "s1"), where=f"{ctx.sampler_name}.sample")


# ---- I3.edges ---------------------------------------------------------------------------------------
