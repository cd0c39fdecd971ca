"""p08-fast step check T4.certain: filter_window's certain on T4's cases (tests/p08_fast/checks_steps_sums.py), True
exactly where the row's own columns prove that its kept set ends inside its window. Its causes re-run the file's
filter_window (tests/p08_fast/step_causes.py)."""
from course.grader.checks import Fail, check
from tests.p08_fast.checks_steps import INF, call, stable_window, step
from tests.p08_fast.checks_steps_sums import t4_calls
from tests.p08_fast.step_causes import expected_window, first_cause, kth_one_column_late_line, window_probe


@check("T4.certain", "filter_window（第 4 步）的 certain：这一行自己的列能证明保留集合在窗口里结束时才为 True",
       "filter_window (step 4), certain: True exactly where the row's own columns prove its kept set ends in the window",
       hint=("p08-fast", 2, "s4"))
@step("filter_window")
def t4_certain(ctx):
    t = ctx.t
    calls = list(t4_calls(ctx))
    _certain_is_one_dimensional(ctx)
    partial = [call for call in calls if not call[11]]                # complete=False: certain is the row's to prove
    if not any(any(call[-1]) for call in partial):                   # all False there: not written yet
        label, *_, shown, _, sure = next(call for call in partial if any(call[6]))
        raise Fail(t(f"called filter_window({shown}) -> certain {sure}（{label}）；T4 里窗口不是整行的每一行你都给 False",
                     f"called filter_window({shown}) -> certain {sure} ({label}); False in every row of T4 whose window is not the whole row"),
                   t("这样是对的，只是慢：每一行都交给了精确路线。这一行的保留集合在窗口里就结束了，它自己的列能证明这一点吗？"
                     "在每个宽度 W 下都成立的证明是什么？（notebook §4 的问题）",
                     "right, only slow: every row goes to the exact route. This row's kept set ends inside its window: "
                     "can its own columns prove it, in a way that holds at every width W? (notebook §4's question)"),
                   where="filter_window")
    for label, x, width, top_k, top_p, row_mass, certain, z, _, _, _, complete, shown, (e, _, _), sure in calls:
        n = z.shape[0]
        for r in range(n):
            if sure[r] == certain[r]:
                continue
            row = f"called filter_window({shown}) -> " + t(f"第 {r} 行", f"row {r}")
            got = t(f"{row}：certain = {sure[r]}，期望 {certain[r]}（{label}）",
                    f"{row}: certain = {sure[r]}, expected {certain[r]} ({label})")
            if complete:
                raise Fail(got, ctx.t("complete=True：窗口就是整行，保留集合不可能伸到窗口外：每一行都 certain（全 True）",
                                      "complete=True: the window is the whole row, so no kept set can reach past it: every "
                                      "row is certain (all True)"), where="filter_window")
            n_kept = expected_window(z[r].cpu().tolist(), top_k[r], top_p[r], row_mass[r])[0]
            kept = int((e[r] > 0).sum())
            if kept != n_kept:
                raise Fail(got, t(f"你的 e 在这一行保留 {kept} 列，P08 保留 {n_kept} 列：certain 说的是这个保留集合，先修好 T4.filter_window",
                                  f"your e keeps {kept} columns in this row, p08 keeps {n_kept}: certain speaks of that kept "
                                  "set, so fix T4.filter_window first"), where="filter_window")
            raise Fail(got,
                       *first_cause(lambda: kth_one_column_late_line(ctx),
                                    lambda: _certain_not_its_own(ctx, x[r if n > 1 else 0], width, top_k[r], top_p[r],
                                                                 row_mass[r], sure[r], n),
                                    lambda: _run_ends_inside(ctx, z[r].cpu().tolist(), n_kept, top_k[r], certain[r]),
                                    lambda: _top_p_cut_before_the_tie(ctx, z[r].cpu().tolist(), n_kept, top_k[r],
                                                                      top_p[r], sure[r]),
                                    lambda: _run_reaches_the_edge(ctx, z[r].cpu().tolist(), n_kept, top_k[r], sure[r])),
                       ctx.t("certain 只看这一行自己：开了 top-k 的行要第 k 大的值 > 第 k 列（紧跟其后）的值；只开 top-p 的行要最后保留的值 > "
                             "窗口最后一个值（否则一串相等的值可能延续到窗口外，而窗口宽度 W 由同批的别人决定）",
                             "certain is judged by the row alone: a top-k row needs its k-th value > the value right after "
                             "it (column k); a top-p-only row needs its last kept value > the window's last value "
                             "(otherwise a run of equal values may go on outside, and the width W is set by the peers)"),
                       where="filter_window")


def _certain_is_one_dimensional(ctx):
    """Fail when the file's certain is not [n]: the given code reads certain.tolist() and counts its False entries, and
    a [n, 1] tensor's list holds lists, none of them False: every row would count as certain."""
    z = ctx.tensor([[3.0, 2.0, 1.0, 0.0], [2.0, 1.0, 0.0, -1.0]])
    k, p = ctx.tensor([[2], [2]]).long(), ctx.tensor([[INF], [INF]])
    shown = "z=[[3, 2, 1, 0], [2, 1, 0, -1]], top_k=[2, 2], top_p=[inf, inf], row_mass=None, complete=False"
    sure = call(ctx, "filter_window", shown, z, k, p, None, False)[3]
    if tuple(sure.shape) != (2,):
        raise Fail(f"called filter_window({shown}) -> certain " + ctx.t(f"的形状是 {list(sure.shape)}，期望 [2]",
                                                                        f"of shape {list(sure.shape)}, expected [2]"),
                   ctx.t("certain 是一维的 [n]。给定代码读 certain.tolist() 数里面的 False；[n, 1] 的列表里装的是列表，一个 False 也没有："
                         "每一行都算 certain，没有一行会交给精确路线", "certain is one-dimensional, [n]. The given code reads "
                         "certain.tolist() and counts its False entries; a [n, 1] tensor's list holds lists, none of them "
                         "False: every row would count as certain and none would go to the exact route"),
                   where="filter_window")


def _certain_not_its_own(ctx, row, width, top_k, top_p, row_mass, got, n):
    """A row whose certain came out wrong: a line when the file's own filter_window, re-run on the same row alone or
    at other widths, gives this row another certain: it reads another row's columns, or columns the width decides.
    Else None."""
    def certain_at(w):
        return window_probe(ctx, stable_window(row[None], w)[0][0].tolist(), top_k, top_p, row_mass)[1]
    vocab = row.shape[0]
    if n > 1 and certain_at(width) not in (None, got):
        return ctx.t(f"这一行单独调用时你的 certain 是 {not got}，和别的行一起时是 {got}：它读到了别的行的东西（比如一个不是逐行的下标）。"
                     "certain 只能由这一行自己的列决定",
                     f"called on this row alone, your certain is {not got}; beside the other rows, {got}: it reads something "
                     f"of another row (an index that is not per row, say). A row's certain comes from its own columns")
    if top_k <= 0:
        return None
    widths = sorted({w for w in (top_k + 1, top_k + 2, width, vocab - 1) if top_k < w < vocab})
    seen = {w: certain_at(w) for w in widths}
    if None in seen.values() or len(set(seen.values())) < 2:
        return None
    shown = ", ".join(f"W={w}: {v}" for w, v in seen.items())
    return ctx.t(f"同一行、同样的参数，你的 certain 随窗口宽度变：{shown}。W 由同批的别人决定：top-k 行只能看每个窗口都有的列"
                 f"（第 0..{top_k} 列）", f"the same row with the same params, and your certain changes with the window's "
                 f"width: {shown}. The peers set W: a top-k row may read only the columns every window of it holds "
                 f"(columns 0..{top_k})")


def _run_ends_inside(ctx, z, n_kept, top_k, expected):
    """A top-p-only row that is certain, whose cut falls inside a run of equal values that ends before the window's
    last column, came out not certain: a line saying why the window settles it. Else None."""
    if top_k > 0 or not expected or n_kept >= len(z) or z[n_kept - 1] != z[n_kept]:
        return None
    run = [j for j, v in enumerate(z) if v == z[n_kept - 1]]
    return ctx.t(f"切口落在一串相等的值（{z[n_kept - 1]:g}，第 {run[0]}..{run[-1]} 列）中间，但这串值在窗口里就结束了（窗口最后一个值 "
                 f"{z[-1]:g} 更低）：整串都在窗口里、按 id 排好，保留的正是 p08 会保留的那几个，这一行自己的列就能证明。"
                 f"只有延续到窗口最后一列的一串（看不到它在哪结束）才让一行不能确定",
                 f"the cut falls inside a run of equal values ({z[n_kept - 1]:g}, columns {run[0]}..{run[-1]}), but the run "
                 f"ends inside the window (its last value, {z[-1]:g}, is lower): the whole run is in the window, in id order, "
                 f"so the kept ones are those p08 keeps, and the row's own columns prove it. Only a run that reaches the "
                 f"window's last column (its end out of sight) leaves a row unsure")


def _run_reaches_the_edge(ctx, z, n_kept, top_k, got):
    """A top-p-only row called certain whose last kept value equals the window's last value: a line saying the run
    may go on past the window. Else None."""
    if top_k > 0 or not got or z[n_kept - 1] != z[-1]:
        return None
    return ctx.t(f"你的 certain 是 True，但最后保留的值（第 {n_kept - 1} 列，{z[-1]:g}）等于窗口最后一个值：这串相等的值可能延续到窗口外，"
                 "窗口装进这串里的哪些 id 随宽度变（notebook §2），这一行自己的列证明不了保留集合在窗口里结束",
                 f"your certain is True, but the last kept value (column {n_kept - 1}, {z[-1]:g}) equals the window's last "
                 "value: the run of equal values may go on past the window, and which of its ids a window holds changes "
                 "with the width (notebook §2), so the row's own columns cannot prove that its kept set ends inside")


def _top_p_cut_before_the_tie(ctx, z, n_kept, top_k, top_p, got):
    """A top-k row called certain whose k-th value ties column k, where top-p cuts before column top_k: a line when the
    file calls the same row not certain with top-p off (top-p's cut is what it trusts). Else None."""
    if top_k <= 0 or not got or top_p == INF or n_kept >= top_k or z[top_k] != z[top_k - 1]:
        return None
    if window_probe(ctx, z, top_k, INF)[1] is not False:
        return None
    return ctx.t(f"top_p 关掉时你说这一行不 certain；top_p = {top_p:g}（保留 {n_kept} 列，在那串与第 k 大的值相等的值之前就切了）时却说 "
                 f"certain。可是 top-p 的 100 % 是整个 top-k 集合的质量，与第 k 大的值相等的值可能延续到窗口外：切口本身就取决于它们，"
                 f"这一行自己的列证明不了",
                 f"with top_p off you call this row not certain; with top_p = {top_p:g} (it keeps {n_kept} column"
                 f"{'s' * (n_kept > 1)}, cut before the run tied with the k-th value) you call it certain. But top-p's "
                 f"100 % is the mass of the whole top-k set, and values tied with the k-th may go on past the window: the "
                 f"cut itself depends on them, so the row's own columns cannot prove it")
