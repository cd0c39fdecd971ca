"""p08-fast step check T1: route(params, vocab) puts each row on its route by its own params alone. Helpers and the
rules of the step checks: tests/p08_fast/checks_steps.py."""
from course.grader.checks import Fail, check, describe
from tests.p08_fast.checks_steps import call, step

ROUTES = ("greedy", "top_k", "top_p", "plain", "exact")
VOCAB = 1000


def _cases(ctx, window_k):
    """(params, expected route, why) for rows that sit on every edge of the rule."""
    p, t = ctx.params, ctx.t
    return [
        (p(temperature=0.0), "greedy", "temperature 0"),
        (p(temperature=0.0, top_k=5, top_p=0.5), "greedy", t("temperature 0 加过滤：仍是 greedy", "temperature 0 with filters: still greedy")),
        (p(temperature=9e-6, top_k=300), "greedy", "temperature 9e-6 < 1e-5"),
        (p(temperature=1e-5, top_k=5), "top_k", t("temperature 1e-5 不算 greedy", "temperature 1e-5 is not greedy")),
        (p(top_k=5), "top_k", "top_k 5"),
        (p(top_k=40, top_p=0.9), "top_k", t("top_k 40 且 top_p 0.9：top-k 开启", "top_k 40 and top_p 0.9: top-k on")),
        (p(top_k=1), "top_k", "top_k 1"),
        (p(top_k=window_k), "top_k", f"top_k = WINDOW_K = {window_k}"),
        (p(top_k=window_k + 1), "exact", f"top_k = WINDOW_K + 1 = {window_k + 1}"),
        (p(top_k=VOCAB - 1, top_p=0.5), "exact", t(f"top_k = V - 1 = {VOCAB - 1}：开启，大于 WINDOW_K",
                                                   f"top_k = V - 1 = {VOCAB - 1}: on, above WINDOW_K")),
        (p(top_k=VOCAB, top_p=0.9), "top_p", t(f"top_k = V = {VOCAB} 是关闭的，top_p 0.9", f"top_k = V = {VOCAB} is off, top_p 0.9")),
        (p(top_k=VOCAB + 5), "plain", t("top_k = V + 5 是关闭的，top_p 1", "top_k = V + 5 is off, top_p 1")),
        (p(top_k=0, top_p=0.9), "top_p", t("top_k 0 是关闭的，top_p 0.9", "top_k 0 is off, top_p 0.9")),
        (p(top_k=-1, top_p=0.999), "top_p", "top_k -1, top_p 0.999"),
        (p(top_k=-2), "plain", t("top_k -2 是关闭的，top_p 1", "top_k -2 is off, top_p 1")),
        (p(), "plain", t("默认值：不过滤", "defaults: no filter")),
        (p(temperature=1.7, repetition_penalty=1.3, seed=3), "plain",
         t("temperature 1.7 加 penalty，不过滤", "temperature 1.7 and a penalty, no filter")),
    ]


def _placed(ctx, got, n, shown):
    """{row: route name} from the learner's Routes; rows that appear twice, or outside [0, n), fail."""
    where, one_list = {}, ctx.t(f"每一行（0..{n - 1}）恰好在一个列表里", f"each row (0..{n - 1}) goes in exactly one list")
    for name in ROUTES:
        rows = getattr(got, name, None)
        if rows is None:
            raise Fail(f"called route({shown}) -> {describe(got)}",
                       ctx.t(f"期望 Routes(greedy, top_k, top_p, plain, exact)：没有 {name}",
                             f"expected Routes(greedy, top_k, top_p, plain, exact): it has no {name}"), where="route")
        rows = list(rows.tolist() if hasattr(rows, "tolist") else rows)
        if rows != sorted(rows):
            raise Fail(f"called route({shown}) -> {name} = {rows}",
                       ctx.t("每个列表按 batch 行号升序", "each list holds batch rows in ascending order"), where="route")
        for row in rows:
            if not (isinstance(row, int) and 0 <= row < n) or row in where:
                raise Fail(f"called route({shown}) -> " + ctx.t(f"第 {row!r} 行在 {name}" + (f" 和 {where[row]} 里" if row in where else " 里"),
                                                             f"row {row!r} in {name}" + (f" and in {where[row]}" if row in where else "")),
                           one_list, where="route")
            where[row] = name
    missing = [r for r in range(n) if r not in where]
    if missing:
        raise Fail(f"called route({shown}) -> " + ctx.t(f"第 {missing} 行不在任何列表里", f"rows {missing} in no list"), one_list,
                   where="route")
    return where


def _knobs(p) -> str:
    """The params a route is decided by, e.g. 'temperature=1.0, top_k=5, top_p=1.0' (both T1 messages show them)."""
    return f"temperature={p.temperature}, top_k={p.top_k}, top_p={p.top_p}"


@check("T1.route", "route（第 1 步）：每一行按自己的参数走 greedy / top_k / top_p / plain / exact",
       "route (step 1): each row goes greedy / top_k / top_p / plain / exact by its own params",
       hint=("p08-fast", 2, "s1"))
@step("route")
def t2_route(ctx):
    window_k = getattr(ctx.impl, "WINDOW_K", 256)
    cases = _cases(ctx, window_k)
    params = [p for p, _, _ in cases]
    shown = ctx.t(f"{len(params)} 行, vocab={VOCAB}", f"{len(params)} rows, vocab={VOCAB}")
    where = _placed(ctx, call(ctx, "route", shown, params, VOCAB), len(params), shown)
    for row, (p, want, _) in enumerate(cases):        # first the rows alone: a route may not depend on the peers
        one = ctx.t(f"[第 {row} 行], vocab={VOCAB}", f"[row {row}], vocab={VOCAB}")
        alone = _placed(ctx, call(ctx, "route", one, [p], VOCAB), 1, one)
        if alone[0] != where[row]:
            raise Fail(ctx.t(f"called route({one}) -> 第 {row} 行（{_knobs(p)}）在 {alone[0]}，但在 {len(params)} 行的 batch 里 "
                             f"-> 在 {where[row]}",
                             f"called route({one}) -> row {row} ({_knobs(p)}) in {alone[0]}, but in the "
                             f"batch of {len(params)} -> in {where[row]}"),
                       ctx.t("一行走哪条路只能由它自己的参数决定：路线不同，数值就不同，批不变性就没了",
                             "a row's route must depend on its own params alone: another route computes other floats, "
                             "and batch invariance is gone"), where="route")

    for row, (p, want, why) in enumerate(cases):
        if where[row] != want:
            top1 = p.top_k == 1 and where[row] == "greedy" and ctx.t(
                "top_k = 1 不是 greedy：greedy 取 argmax 一个 token，top_k = 1 留下与最大值相等的每一个值（并列的最大值）再从中抽样；"
                "只有 temperature 决定 greedy",
                "top_k = 1 is not greedy: greedy takes one token, the argmax, while top_k = 1 keeps every value equal to "
                "the maximum (tied maxima) and draws among them; the temperature alone decides greedy")
            raise Fail(ctx.t(f"called route({shown}) -> 第 {row} 行（{_knobs(p)}）在 {where[row]}，期望 {want}（{why}）",
                             f"called route({shown}) -> row {row} ({_knobs(p)}) in {where[row]}, expected {want} ({why})"),
                       *[line for line in [top1 or _route_cause(ctx, p, where[row], want, window_k)] if line],
                       ctx.t("greedy 先判（temperature < 1e-5，不管过滤参数）；top_k 开启 = 0 < top_k < V：<= WINDOW_K 走 top_k，"
                             "更大走 exact；只开 top_p（< 1）走 top_p；都不开走 plain",
                             "greedy first (temperature < 1e-5, whatever the filters); top-k on = 0 < top_k < V: top_k up to "
                             "WINDOW_K, exact above; top-p only (< 1): top_p; nothing on: plain"), where="route")


def _route_cause(ctx, p, got, want, window_k):
    """A line naming the mistake behind a row on the wrong route, where the row's params and the route it took show
    it: a greedy row with filters sent by its filters, or top_k = WINDOW_K sent to the exact route. Else None."""
    if want == "greedy" and got != "greedy":
        try:                                                        # the same temperature with no filter at all
            plain = ctx.fn("route")([ctx.params(temperature=p.temperature)], VOCAB)
            alone = list(plain.greedy) == [0]
        except Exception:  # noqa: BLE001 - it cannot say
            return None
        if not alone:
            return ctx.t(f"temperature {p.temperature:g} 不加任何过滤时你的 route 也不把它当 greedy：greedy 是 temperature < "
                         f"GREEDY_TEMPERATURE（1e-5），比较的是这个常数",
                         f"with temperature {p.temperature:g} and no filter at all your route does not make it greedy either: "
                         f"greedy is temperature < GREEDY_TEMPERATURE (1e-5): compare with that constant")
        return ctx.t(f"这一行 temperature {p.temperature:g} < 1e-5，是 greedy；你按它的过滤参数（top_k {p.top_k}、top_p {p.top_p:g}）"
                     f"把它送去了 {got}：先判 greedy，再看过滤参数",
                     f"this row's temperature {p.temperature:g} is below 1e-5: it is greedy; your route sent it to {got} by "
                     f"its filters (top_k {p.top_k}, top_p {p.top_p:g}): decide greedy first, the filters after")
    if want == "top_k" and got == "exact" and p.top_k == window_k:
        return ctx.t(f"top_k = WINDOW_K = {window_k} 的行自己要 top_k + 1 = {window_k + 1} 列，top-k 窗口最多 WINDOW_K + 1 = "
                     f"{window_k + 1} 列：放得下，走 top_k。差了一：比的是 top_k 与 WINDOW_K（或 top_k + 1 与 WINDOW_K + 1）",
                     f"a row with top_k = WINDOW_K = {window_k} needs its own top_k + 1 = {window_k + 1} columns, and the "
                     f"top-k window holds up to WINDOW_K + 1 = {window_k + 1}: it fits, so top_k. An off-by-one: compare "
                     f"top_k with WINDOW_K (or top_k + 1 with WINDOW_K + 1)")
    return None
