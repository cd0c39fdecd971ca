"""Acceptance checks E1: the repetition penalty, on its own (values, distinct ids, negatives, tensor and long
histories, ids past 32767) and inside sample() on a greedy row (it comes before the greedy test)."""
import torch

from course import oracle
from course.grader.checks import RAISE_AS_IS, Fail, check, fmt_vec, params_text
from tests.p08 import diagnose

BOTH = ("p08", "p08-fast")


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
            called = f"called apply_repetition_penalty({fmt_vec(base)}, {label}) -> {fmt_vec(out)}, expected {fmt_vec(expected)}"
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
            if isinstance(exc, RAISE_AS_IS):
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
