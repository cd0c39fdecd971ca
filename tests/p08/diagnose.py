"""Established causes: when a whole-sampler check fails, re-run the learner's own pieces to find out why.

A check that sees sample() go wrong must not guess. Before it names a cause of its own (step order, fp32,
the generator), it calls `earlier_step_first`, which runs the simpler things that could explain the same
symptom and, if one of them is wrong, fails with "fix that first":
  0. the order of the output (row i is req_ids[i]'s token),
  1. the learner's apply_repetition_penalty / apply_top_k / apply_top_p on the very row (p08 only),
  2. greedy rows (argmax, before any division),
  3. the seeded stream (a request's draws must vary; different seeds must give different draws).
`matching_mistake` then compares observed draws with the distributions that known mistakes would give.
"""
from __future__ import annotations

import math

import torch

from course import oracle
from course.grader.checks import RAISE_AS_IS, Explained, Fail, WrongOutput, fmt_set, fmt_vec
from tests.p08.context import STEP_OF, crash_explainer, fix_first_line, params_text  # noqa: F401 (STEP_OF: re-exported)
from tests.p08.draws import counts_of, draws_of, worst_z

GREEDY = 1e-5
_PIECES: dict = {}   # problem name -> fn(ctx, row, params, prev): (lines, hint, check) when its own pieces are wrong


def pieces_checker(*problems):
    """Register fn(ctx, row, params, prev) -> None or (lines, hint, check): a problem's own pieces re-run on one row
    (p08's are pieces_verdict below; a problem whose learner writes other pieces registers its own)."""
    def register(fn):
        for name in problems:
            _PIECES[name] = fn
        return fn
    return register


def _same(out, expected) -> bool:
    got = [float(v) for v in out.tolist()]
    for a, b in zip(got, expected):
        if math.isinf(b) or math.isinf(a):
            if a != b:
                return False
        elif abs(a - b) > 1e-4 * max(1.0, abs(b)):
            return False
    return True


def _kept(values) -> set:
    return {i for i, v in enumerate(values) if v != float("-inf")}


def pieces_verdict(ctx, row, params, prev):
    """p08: the learner's step functions on this row, each fed the oracle's output of the step before.
    Returns None when all agree with the oracle, else (lines, hint, check) for the first wrong one."""
    if not ctx.has_functions:
        return None
    values = [float(v) for v in row]
    expected = oracle.penalize(values, prev, params.repetition_penalty)
    out = ctx.vector("apply_repetition_penalty", torch.tensor(values, device=ctx.device), list(prev),
                     params.repetition_penalty)
    if not _same(out, expected):
        return ([ctx.t("调用 ", "called ") + f"apply_repetition_penalty({fmt_vec(values)}, prev_tokens={list(prev)[:8]}, "
                 f"penalty={params.repetition_penalty}) -> {fmt_vec(out)}" + ctx.t("，期望 ", ", expected ") + fmt_vec(expected)],
                ("p08", 2, "s1"), "E1.penalty")
    if params.temperature < GREEDY:
        return None
    tempered = [v / params.temperature for v in expected]
    steps = (("apply_top_k", params.top_k, oracle.top_k_filter, "top_k", "s4", "E2.top_k"),
             ("apply_top_p", params.top_p, oracle.top_p_filter, "top_p", "s5", "E2.top_p"))
    for name, arg, rule, label, anchor, check_id in steps:
        after = rule(tempered, arg)
        out = ctx.vector(name, torch.tensor(tempered, device=ctx.device), arg)
        got = _kept(out.tolist())
        clear = label != "top_p" or oracle.cut_is_clear(tempered, -1, arg)   # a near-tie at the cut: either answer is right
        if (clear and got != _kept(after)) or (not got and _kept(after)):
            return ([ctx.t("调用 ", "called ") + f"{name}({fmt_vec(tempered)}, {label}={arg}) -> " + ctx.t(
                         f"保留 {fmt_set(got)}，期望 {fmt_set(_kept(after))}", f"kept {fmt_set(got)}, expected {fmt_set(_kept(after))}")],
                    ("p08", 2, anchor), check_id)
        if not clear:
            return None
        tempered = after
    return None


def stream_verdict(ctx):
    """None when a seeded request's stream moves and seeds matter (or sample() crashes on the probe: a crash says
    nothing about the stream, the check reports what it saw); else (lines, hint, check)."""
    try:
        return _stream_verdict(ctx)
    except RAISE_AS_IS:
        raise
    except Exception:  # noqa: BLE001 - the learner's code may raise anything
        return None


def _stream_verdict(ctx):
    flat = torch.zeros(1, 64, device=ctx.device)
    sampler = ctx.sampler()
    draws = [ctx.sample(sampler, flat, ["q"], [ctx.params(seed=21)], [[]])[0] for _ in range(8)]
    if len(set(draws)) == 1:
        return ([ctx.t(f"一个请求（seed=21）在 64 个相等的 logits 上抽 8 次 -> {draws}：随机流一直没动",
                       f"8 draws of one request (seed=21) over 64 equal logits -> {draws}: the stream never moves")],
                ("p08", 1, "q6"), "I5")
    again = [ctx.sample(replay, flat, ["q"], [ctx.params(seed=21)], [[]])[0] for replay in [ctx.sampler()] for _ in range(8)]
    if again != draws:                                       # a fresh sampler must replay the seed's stream
        state = torch.get_rng_state()
        try:
            seeded = []
            for seed in (1, 1, 2):
                torch.manual_seed(seed)
                seeded.append([ctx.sample(ctx.sampler(), flat, ["q"], [ctx.params(seed=21)], [[]])[0] for _ in range(3)])
        finally:
            torch.set_rng_state(state)
        why = (ctx.t("它跟着 torch 的全局随机状态走（torch.manual_seed 决定它，seed 不决定）：用这个请求自己的 generator 抽",
                     "it follows torch's global random state (torch.manual_seed decides it, the seed does not): draw from the "
                     "request's own generator") if seeded[0] == seeded[1] != seeded[2] else
               ctx.t("同一个 seed 在新的 sampler 里要重放同样的随机流", "the same seed in a fresh sampler must replay the same stream"))
        return ([ctx.t(f"一个请求（seed=21）在 64 个相等的 logits 上抽 8 次 -> {draws}；在另一个新的 sampler 里 -> {again}：{why}",
                       f"8 draws of one request (seed=21) over 64 equal logits -> {draws}; in another fresh sampler -> {again}: "
                       f"{why}")], ("p08", 1, "q6"), "I5")
    firsts = [ctx.sample(ctx.sampler(), flat, ["q"], [ctx.params(seed=s)], [[]])[0] for s in range(100, 108)]
    if len(set(firsts)) == 1:
        return ([ctx.t(f"seed 100..107 在 64 个相等的 logits 上的第一次抽取 -> {firsts}：seed 什么也没改变",
                       f"the first draw of seeds 100..107 over 64 equal logits -> {firsts}: the seed changes nothing")],
                ("p08", 1, "q6"), "I5")
    return None


ORDER_IDS = ["zeta", "alpha", "m", "b"]                     # neither sorted nor in insertion order of a dict


def order_verdict(ctx):
    """None unless sample() returns the right tokens in another order than req_ids; else (lines, hint, check)."""
    targets = [5, 1, 6, 2]
    rows = [[4.0 if j == t else -1.0 - 0.1 * j for j in range(8)] for t in targets]          # [4, 8] argmax = targets
    try:
        params = [ctx.params(temperature=0.0), ctx.params(top_k=1, seed=3)] * 2       # greedy and sampled rows, mixed
        got = ctx.sample(ctx.sampler(), ctx.tensor(rows), ORDER_IDS, params, [[]] * 4)
    except RAISE_AS_IS:
        raise
    except Exception:  # noqa: BLE001 - a crash here says nothing about the order: the check reports what it saw
        return None
    if got != targets and sorted(got) == sorted(targets):
        return ([ctx.t(f"调用 {ctx.sampler_name}.sample(4 行，greedy 与 top_k=1 交替，req_ids={ORDER_IDS}) -> {got}，期望 {targets}",
                       f"called {ctx.sampler_name}.sample(4 rows, greedy and top_k=1 in turn, req_ids={ORDER_IDS}) -> {got}, "
                       f"expected {targets}"),
                 ctx.t("每个 token 都对，但顺序变了：第 i 个输出属于 req_ids[i]",
                       "every token is right but the order is not: output i belongs to req_ids[i]")], ("p08", 1, "d6"), "S6")
    return None


def peer_verdict(ctx, row, seed):
    """Why a seeded request (seed, default params, on `row`) changes beside peers, from probes with one peer each:
    unseeded, the same seed, another seed (all with its own row and params), then greedy, top_k=3, T=1.7."""
    def tokens(peer):
        sampler, out = ctx.sampler(), []
        for step in range(4):
            ids = ["q"] if peer is None else ["p", "q"] if step % 2 == 0 else ["q", "p"]
            params = [ctx.params(seed=seed) if r == "q" else peer for r in ids]
            got = ctx.sample(sampler, ctx.tensor([row] * len(ids)), ids, params, [[] for _ in ids])
            out.append(got[ids.index("q")])
        return out
    alone = tokens(None)
    if tokens(ctx.params()) != alone:
        return ctx.t("一个没有 seed、行和参数都与它相同的同伴就改变了它的 token：带 seed 的请求只能从自己的 generator 抽"
                     "（没 seed 的用共享 generator），每步只抽自己的一次",
                     "one unseeded peer with the same row and params already changes its tokens: a seeded request draws "
                     "only from its own generator (the unseeded use the shared one), once per step")
    same, other = tokens(ctx.params(seed=seed)) != alone, tokens(ctx.params(seed=seed + 92)) != alone
    if same and not other:
        return ctx.t(f"seed 相同（{seed}）的同伴会改变它，seed 不同的不会：generator 是按 seed 值存的，要按 req_id 存",
                     f"a peer with the same seed ({seed}) changes it, one with another seed does not: the generators are "
                     f"kept per seed value; keep one per req_id")
    if other:
        return ctx.t("一个 seed 不同、参数相同的同伴就改变了它：它的随机数取决于这个 batch（整批一个 generator、对 [B, V] 调一次 "
                     "multinomial，或每步抽的个数随 batch 变）",
                     "a peer with another seed and the same params changes it: its random numbers depend on the batch (one "
                     "generator or one multinomial for the batch, or a number of draws that changes with it)")
    for peer in (ctx.params(temperature=0.0), ctx.params(seed=99, top_k=3), ctx.params(seed=5, temperature=1.7)):
        if tokens(peer) != alone:
            return ctx.t(f"参数与它相同的同伴不改变它，一个 {params_text(peer)} 的同伴会：它的结果用到了同伴的参数"
                         "（整批共用的 k、p、温度，或随同伴参数变化的抽取次数）",
                         f"peers with its own params do not change it, one peer with {params_text(peer)} does: its result "
                         f"uses the peers' params (a batch-wide k, p or temperature, or a number of draws that depends on them)")
    return ctx.t("任何一个单独的同伴都不改变它，只有更大的 batch 会（见下面的 I1）",
                 "no single peer changes it, only the larger batches do (I1 below shows a smaller failing case, if any)")


def greedy_verdict(ctx):
    """None when T = 0 rows give the argmax (no penalty involved); else (lines, hint, check)."""
    row = [0.5, 2.0, -1.0, 1.0]
    try:
        got = ctx.sample(ctx.sampler(), ctx.tensor([row]), ["g"], [ctx.params(temperature=0.0)], [[]])
    except (WrongOutput, Explained):
        raise                                              # the output itself, or an earlier step, is the cause
    except Fail as exc:
        return (exc.lines, ("p08", 1, "q3"), "I3")
    except Exception as exc:  # noqa: BLE001 - the learner's code may raise anything
        if isinstance(exc, NotImplementedError):
            raise
        return ([ctx.t(f"调用 sample([{fmt_vec(row)[1:-1]}], temperature=0.0) 抛出 {type(exc).__name__}: {str(exc)[:120]}",
                       f"called sample([{fmt_vec(row)[1:-1]}], temperature=0.0) raised {type(exc).__name__}: {str(exc)[:120]}")],
                ("p08", 1, "q3"), "I3")
    if got != [1]:
        lines = [ctx.t("调用 ", "called ") + f"sample([{fmt_vec(row)[1:-1]}], temperature=0.0) -> {got}, " + ctx.t("期望 [1]（argmax）",
                                                                                           "expected [1] (the argmax)")]
        if got == [int(torch.tensor(row).div(0.0).argmax())]:
            lines.append(ctx.t("结果正是 argmax(row / 0)：先除以温度再判断 greedy，除出来全是 ±inf",
                               "the result is exactly argmax(row / 0): the division by the temperature comes before the "
                               "greedy test, and gives ±inf"))
        return lines, ("p08", 1, "q3"), "I3"
    return None


def temperature_verdict(ctx):
    """None when 300 draws of [0, -1] at T = 0.25 fit p(token 0) = 0.982; else (lines, hint, check)."""
    fits, counts, expected = drawn_fits(ctx, [0.0, -1.0], dict(temperature=0.25), [])
    if not fits:
        return ([ctx.t(f"sample([0.0, -1.0], temperature=0.25) 抽 300 次 -> token 0 占 {counts[0] / 300:.3f}，"
                       f"期望 {expected[0]:.3f}（row / T 的 softmax）",
                       f"300 draws of sample([0.0, -1.0], temperature=0.25) -> token 0 {counts[0] / 300:.3f} of the time, "
                       f"expected {expected[0]:.3f} (softmax of row / T)")], ("p08", 2, "s3"), "E2.small_t")
    return None


def drawn_fits(ctx, row, kwargs, prev, draws=300, first_seed=900):
    """(fits, counts, expected): `draws` seeded draws of one row vs the oracle, 6 sigma."""
    tokens = draws_of(ctx, torch.tensor(row), draws, first_seed, prev=prev, **kwargs)
    expected = oracle.filtered_probs(row, prev_tokens=prev, **kwargs)
    counts = counts_of(tokens, len(row))
    return not oracle.sigma_violations(counts, expected, draws), counts, expected


def penalty_verdict(ctx):
    """None when sample() applies the penalty to a sampled (non-greedy, unfiltered) row; else (lines, hint, check)."""
    fits, counts, expected = drawn_fits(ctx, [2.0, 0.0], dict(repetition_penalty=10.0), [0])
    if not fits:
        return ([ctx.t(f"sample([2.0, 0.0], repetition_penalty=10, prev_tokens=[0]) 抽 300 次 -> token 0 占 {counts[0] / 300:.3f}，"
                       f"期望 {expected[0]:.3f}（2.0 / 10 = 0.2 对 0.0）",
                       f"300 draws of sample([2.0, 0.0], repetition_penalty=10, prev_tokens=[0]) -> token 0 {counts[0] / 300:.3f} "
                       f"of the time, expected {expected[0]:.3f} (2.0 / 10 = 0.2 against 0.0)")], ("p08", 2, "s1"), "E1.history")
    return None


FILTER_PROBES = [  # (row, params, the kept set a correct sample() draws from, what it shows)
    ([math.log(p) for p in (0.5, 0.25, 0.15, 0.1)], dict(top_p=0.7), {0, 1},
     ("越过 top_p 的 token 要留下", "top-p keeps the token that crosses top_p")),
    ([2.0, 1.0, 1.0, 0.0], dict(top_k=2), {0, 1, 2}, ("和第 k 大并列的 token 都留下", "top-k keeps every token tied with the k-th")),
    ([1.0, 3.0, 0.0, 2.0], dict(top_k=1), {1}, ("top_k=1 只留最大的值", "top_k=1 keeps only the largest value")),
    ([1.0, 3.0, 0.0, 2.0], dict(top_k=2), {1, 3}, ("top_k=2 留下最大的两个值，不管它们在哪", "top_k=2 keeps the two largest values, "
                                                  "wherever they sit")),
    ([0.7, 0.7, 0.7, 0.7], dict(top_p=0.5), 2, ("之前的质量恰好等于 top_p 的 token 要删掉", "top-p removes a token whose mass before "
                                                "is exactly top_p")),
]


def filter_verdict(ctx):
    """None when sample() itself filters the worked rows right (60 seeded draws each); else (lines, hint, check)."""
    for row, kwargs, want, rule in FILTER_PROBES:
        params = [ctx.params(seed=700 + i, **kwargs) for i in range(60)]
        seen = set(ctx.sample(ctx.sampler(), ctx.tensor([row] * 60), [f"f{i}" for i in range(60)], params, [[]] * 60))
        if (seen != want) if isinstance(want, set) else (len(seen) != want):
            shown = fmt_set(want) if isinstance(want, set) else ctx.t(f"4 个相等 token 中的 {want} 个", f"{want} of the 4 equal tokens")
            args = ', '.join(f'{k}={v}' for k, v in kwargs.items())
            lines = [ctx.t(f"sample([{fmt_vec(row)[1:-1]}], {args}) 抽 60 次 -> tokens {fmt_set(seen)}，期望 {shown}（{rule[0]}）",
                           f"60 draws of sample([{fmt_vec(row)[1:-1]}], {args}) -> tokens {fmt_set(seen)}, expected {shown} "
                           f"({rule[1]})")]
            if ctx.has_functions:                          # the learner's own piece on this very row first
                name, arg = ("apply_top_p", kwargs["top_p"]) if "top_p" in kwargs else ("apply_top_k", kwargs["top_k"])
                kept = _kept(ctx.vector(name, ctx.tensor(row), arg).tolist())
                if (kept != want) if isinstance(want, set) else (len(kept) != want):
                    return ([ctx.t(f"调用 {name}({fmt_vec(row)}, {name[6:]}={arg}) -> 保留 {fmt_set(kept)}，期望 {shown}",
                                   f"called {name}({fmt_vec(row)}, {name[6:]}={arg}) -> kept {fmt_set(kept)}, expected {shown}")],
                            ("p08", 1, "q4" if "top_p" in kwargs else "q5"), f"E2.{name[6:]}")
                lines.append(ctx.t(f"你的 {name} 在这一行上是对的，但 sample() 过滤得不一样：sample() 是不是自己另写了一遍过滤？",
                                   f"your {name} is right on this row, but sample() filters differently: does sample() do "
                                   f"its own filtering?"))
            return lines, ("p08", 1, "q4" if "top_p" in kwargs else "q5"), None if ctx.has_functions else "F1"
    return None


def earlier_step_first(ctx, observed: str, cases=(), greedy=False, stream=False, temperature=False, penalty=False,
                       filters=False, order=None):
    """Fail with 'fix <check> first' if an earlier, simpler step explains the failure just observed.

    cases: (row, params, prev) whose pieces to re-run; greedy / stream / temperature: also re-check those; order: also
    look for a wrong order of the steps (S1-5), by default whenever the stream or the filters are re-checked."""
    if ctx.changed_inputs:                                   # this check's own calls saw inputs sample() had edited
        if verdict := in_place_verdict(ctx):                 # the learner's own step edits its input: that step first
            raise fix_first(ctx, observed, verdict)
        raise fix_first(ctx, observed, (ctx.changed_inputs + [ctx.t(
            "sample() 原地改了调用方传进来的数据（见上一行），之后的调用看到的就不是原来的输入了",
            "sample() changed its caller's input in place (the line above), so later calls saw other inputs")],
            ("p08", 2, "traps"), "I2"))
    verdicts = [order_verdict(ctx)] + [pieces_verdict(ctx, row, p, prev) for row, p, prev in cases]
    if (own := _PIECES.get(ctx.problem.name)) is not None:
        verdicts += [own(ctx, row, p, prev) for row, p, prev in cases]
    if greedy:
        verdicts.append(greedy_verdict(ctx))
    if stream:
        verdicts.append(stream_verdict(ctx))
    if temperature:
        verdicts.append(temperature_verdict(ctx))
    if penalty:
        verdicts.append(penalty_verdict(ctx))
    if filters:
        verdicts.append(filter_verdict(ctx))
    for verdict in verdicts:
        if verdict:
            raise fix_first(ctx, observed, verdict)
    if order if order is not None else (stream or filters):
        if verdict := order_of_steps_verdict(ctx):
            raise fix_first(ctx, observed, verdict)


PIECE_CHECKS = (("apply_repetition_penalty", ([0, 1, 1], 1.5), "E1.penalty", "s1"), ("apply_top_k", (2,), "E2.top_k", "s4"),
                ("apply_top_p", (0.5,), "E2.top_p", "s5"))


def in_place_verdict(ctx):
    """None unless one of the learner's own step functions edits the tensor it is given; else (lines, hint, check) of
    that step (p08 only: a problem without step functions has none to ask)."""
    if not ctx.has_functions:
        return None
    for name, args, check_id, _ in PIECE_CHECKS:
        row = torch.tensor([0.3, -1.2, 2.0, 0.7, -0.1], device=ctx.device)
        try:
            ctx.vector(name, row, *args)
        except RAISE_AS_IS:
            raise
        except Fail as exc:
            if "in place" in " ".join(exc.lines) or "原地" in " ".join(exc.lines):
                return exc.lines, ("p08", 2, "traps"), check_id
        except Exception:  # noqa: BLE001 - a piece that crashes here is another check's business
            continue
    return None


def order_of_steps_verdict(ctx):
    """None unless sample() keeps, on S1-5's rows, exactly the set that one wrong order of the steps gives, while the
    learner's own pieces are right on those rows and the seeded stream moves; else (lines, hint, "S1-5")."""
    from tests.p08.checks_contract import ORDER_CASES, WRONG_ORDERS, kept_set_in_order   # (it imports this module)
    if stream_verdict(ctx) or temperature_verdict(ctx):    # a stream that never moves, a temperature not used: not the order
        return None
    for row, kwargs, prev, why, hint in ORDER_CASES:
        params = ctx.params(**kwargs)
        if pieces_verdict(ctx, row, params, prev):
            return None
        allowed = oracle.kept(oracle.probs_for(row, params, prev))
        sampler, seen, history = ctx.sampler(), set(), list(prev)   # a file that edits its prev_tokens edits a copy
        for _ in range(80):
            seen |= set(ctx.sample(sampler, ctx.tensor([row]), ["r"], [params], [history]))
        if seen == allowed:
            continue
        matches = [ctx.t(*label) for steps, label in WRONG_ORDERS if kept_set_in_order(row, params, prev, steps) == seen]
        if not matches:                                  # (two labels can name one order's set)
            return None
        return ([ctx.t("调用 ", "called ") + f"{ctx.sampler_name}.sample([{', '.join(f'{v:.3f}' for v in row)}], "
                 f"{params_text(params)}, prev_tokens={prev}) " + ctx.t("80 次", "80 times") + f" -> tokens {sorted(seen)}"
                 + ctx.t("，期望 ", ", expected ") + f"{sorted(allowed)}",
                 ctx.t(f"正好是这种顺序得到的集合：{' / '.join(matches)}。",
                       f"exactly the set this order gives: {' / '.join(matches)}. ")
                 + ctx.t(*why)], hint, "S1-5")
    return None


@crash_explainer("p08")
def explain_crash(ctx, observed, cases):
    """sample() raised: if the learner's own penalty / top-k / top-p is wrong on a row of that call, fix that first."""
    for row, params, prev in cases:
        if verdict := pieces_verdict(ctx, row, params, prev):
            raise fix_first(ctx, observed, verdict, Explained)


def fix_first(ctx, observed, verdict, kind=Fail):
    """The failure for `observed` when `verdict` (lines, hint, check) names an earlier step."""
    lines, hint, check_id = verdict
    culprit = (lines[0].split("(")[0].replace("called ", "").replace("调用 ", "")
               if lines[0].startswith(("called apply_", "调用 apply_")) else None)
    first = [fix_first_line(ctx, check_id)] if check_id else []
    return kind(observed, *lines, *first, hint=hint, where=culprit or f"{ctx.sampler_name}.sample")


def knobs(params) -> dict:
    """The sampling settings of params without its seed: ctx.params(seed=..., **knobs(params)) is the same request."""
    return {name: getattr(params, name) for name in ("temperature", "top_k", "top_p", "repetition_penalty")}


def batch_verdict(ctx, row, params, prev, expected, draws):
    """A sentence when the same request drawn `draws` times in batches of rows with its own params fits `expected`
    (the check's draws, beside rows with other params, did not): then the other rows are the cause. Else None."""
    tokens = draws_of(ctx, torch.tensor([float(v) for v in row]), draws, 5000, prev=prev, **knobs(params))
    if worst_z(counts_of(tokens, len(row)), expected, draws) > 4:          # a clear fit, not a borderline one
        return None
    return ctx.t(f"同一个请求放在参数都和它相同的 batch 里抽 {draws} 次是对的，和别的参数的行放在一起就不对：它的过滤或抽取用到了同批其他行"
                 "（整批共用的 k、p、温度或 max），见 I1",
                 f"the same request drawn {draws} times in batches of rows with its own params fits; beside rows with other "
                 f"params it does not: its filtering or draw uses the other rows (a batch-wide k, p, temperature or max), "
                 f"see I1")


# ---- which known mistake do the draws match? -------------------------------------------------------
def _variants(row, params, prev):
    """(label_zh, label_en, distribution) for mistakes a sampler makes when its pieces are right."""
    t, k, p, r = params.temperature, params.top_k, params.top_p, params.repetition_penalty
    pen = oracle.penalize(row, prev, r)
    f = oracle.filtered_probs
    out = [("抽样没有用上温度（按 T = 1 的分布）", "the draw does not use the temperature (the T = 1 distribution)",
            f(row, 1.0, k, p, r, prev)),
           ("乘以温度而不是除以", "the logits are multiplied by the temperature", f([v * t * t for v in row], t, k, p, r, prev)),
           ("没有用 prev_tokens 做惩罚", "the repetition penalty is not applied", f(row, t, k, p, 1.0, ())),
           ("top-k 没有生效", "top-k is not applied", f(row, t, -1, p, r, prev)),
           ("top-p 没有生效", "top-p is not applied", f(row, t, k, 1.0, r, prev))]
    strict = [v / t for v in pen]                              # top-p that drops the crossing token (cumsum > p)
    strict = oracle.top_k_filter(strict, k)
    if 0 < p < 1:
        probs, mass, order = oracle.softmax(strict), 0.0, oracle.descending_order(strict)
        for rank, i in enumerate(order):
            mass += probs[i]
            if rank > 0 and mass > p:
                strict[i] = float("-inf")
    out.append(("top-p 把越过阈值的 token 也删了（cumsum > top_p）", "top-p removes the token that crosses top_p (cumsum > top_p)",
                oracle.softmax(strict)))
    tempered = [v / t for v in pen]
    p_then_k = oracle.top_k_filter(oracle.top_p_filter(tempered, p), k)
    out.append(("top-p 在 top-k 之前", "top-p runs before top-k", oracle.softmax(p_then_k)))
    filtered_raw = oracle.top_p_filter(oracle.top_k_filter(pen, k), p)
    out.append(("温度在 top-k/top-p 之后", "the temperature is applied after top-k/top-p",
                oracle.softmax([v / t for v in filtered_raw])))
    return out


def matching_mistake(ctx, counts, draws, row, params, prev):
    """The label of the one known mistake whose distribution the draws fit (6 sigma), else None."""
    right = oracle.probs_for(row, params, prev)
    fits = [ctx.t(zh, en) for zh, en, probs in _variants(row, params, prev)
            if max(abs(a - b) for a, b in zip(probs, right)) > 1e-9 and not oracle.sigma_violations(counts, probs, draws)]
    return fits[0] if len(fits) == 1 else None
