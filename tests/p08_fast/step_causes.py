"""Established causes for the step checks T2-T4: each helper re-runs the learner's own step function (on the failing
input, or a variant of it that tells two causes apart) and returns a line only when that shows the cause; else None.
The step checks themselves: tests/p08_fast/checks_steps.py, checks_steps_sums.py."""
import math

import torch

from course.fast_batch import CHUNK


def bits(x: float) -> str:
    """A float32 shown with enough digits that two different floats never print the same."""
    return f"{x:.9g}"


def first_cause(*causes) -> list:
    """[the line of the first cause that names one], or []: each cause a function of no arguments, tried in order;
    the ones after it are not run (each re-runs the learner's code)."""
    for cause in causes:
        line = cause()
        if line:
            return [line]
    return []


def _rerun(ctx, name, *args):
    """The learner's step function on args, or None when it raises (it cannot say)."""
    try:
        return ctx.fn(name)(*args)
    except Exception:  # noqa: BLE001 - it cannot say
        return None


# ---- T2 window_topk and canonical_window ---------------------------------------------------------------------
def few_chunks_line(ctx, vocab, width):
    """window_topk raised on a row with fewer whole chunks than the width: a line when the file's window_topk runs right
    on a row of 4096 logits (64 chunks) at the same width."""
    if vocab // CHUNK >= width:
        return None
    x = torch.randn(2, 4096, generator=torch.Generator().manual_seed(7)).to(ctx.device)
    got = _rerun(ctx, "window_topk", x, width)
    if not isinstance(got, tuple) or not torch.equal(got[0].float().cpu(), torch.topk(x, width).values.cpu()):
        return None
    return ctx.t(f"这一行 V = {vocab}，只有 {vocab // CHUNK} 个完整的 chunk（每个 {CHUNK} 个 logit），比宽度 {width} 还少，选不出 {width} 个"
                 f"chunk 最大值；在 4096 个 logit 的行上你的 window_topk 是对的。chunk 太少时（参考解：C < 4 W）直接用 torch.topk",
                 f"this row of V = {vocab} holds {vocab // CHUNK} whole chunks of {CHUNK} logits, fewer than the width "
                 f"{width}: there are not {width} chunk maxima to pick. On rows of 4096 logits your window_topk is right. "
                 f"With too few chunks (the reference: C < 4 W) take plain torch.topk")


def flat_stride_line(ctx, x, width, r):
    """Row r of x [n, V] is wrong: a line when the file's window_topk gets row r right alone and gets the same batch
    right cut to a multiple of CHUNK logits (a row offset that assumes whole chunks: r * C * CHUNK, not r * V)."""
    n, vocab = x.shape
    if r == 0 or vocab % CHUNK == 0 or vocab // CHUNK < 1:
        return None
    cut = x[:, :vocab // CHUNK * CHUNK].contiguous()
    alone, whole = _rerun(ctx, "window_topk", x[r:r + 1].contiguous(), width), _rerun(ctx, "window_topk", cut, width)
    if not (isinstance(alone, tuple) and isinstance(whole, tuple)):
        return None
    if not (torch.equal(alone[0][0].float().cpu(), torch.topk(x[r], width).values.cpu())
            and torch.equal(whole[0].float().cpu(), torch.topk(cut, width).values.cpu())):
        return None
    return ctx.t(f"第 {r} 行单独算是对的，把这个 batch 截到 {cut.shape[1]} 个 logit（{CHUNK} 的整数倍）也是对的；V = {vocab} 不是 {CHUNK} 的"
                 f"整数倍时就错了：在展平的 batch 里第 {r} 行从 {r} * V 开始，而按 {r} * (V // {CHUNK}) * {CHUNK} 定位（只数整 chunk 的步长）"
                 f"会读到上一行的尾部",
                 f"row {r} alone is right, and so is this batch cut to {cut.shape[1]} logits (a multiple of {CHUNK}); with "
                 f"V = {vocab}, not a multiple of {CHUNK}, it is wrong: in the flattened batch row {r} starts at {r} * V, and "
                 f"an offset of {r} * (V // {CHUNK}) * {CHUNK} (a stride of whole chunks only) reads the row before's tail")


def id_key_line(ctx, high, low):
    """Two different values came out in ascending order: a line when the file's canonical_window orders the pair by
    their ids (one id order right, the other wrong): a sort key that mixes the ids into the values."""
    def by_ids(high, low):
        """Whether the pair's order follows its ids (None: the file cannot say)."""
        z, orders = torch.tensor([[high, low]], device=ctx.device), []
        for pair in ([7, 3], [3, 7]):
            got = _rerun(ctx, "canonical_window", z.clone(), torch.tensor([pair], device=ctx.device))
            if not isinstance(got, tuple):
                return None
            orders.append(got[0][0, 0].item() == high)
        return orders[0] != orders[1]

    if not by_ids(high, low):
        return None
    if by_ids(100.0, -100.0):                                                 # far apart too: the ids decide alone
        return ctx.t("你的 canonical_window 按 id 排，值的顺序不算数：即使两个值相差 200（100 和 -100），谁在前也由 id 决定。最后一次排序"
                     "决定结果：先按 id 排，再按值降序做稳定排序（两次排序的次序反了）",
                     "your canonical_window orders by id, whatever the values: even two values 200 apart (100 and -100) "
                     "come out in their ids' order. The last sort decides: sort by id first, then by value, descending, "
                     "with a stable sort (your two sorts run the other way round)")
    return ctx.t(f"两个不同的值 {high!r} 和 {low!r}（相差 {high - low:.3g}）：你的 canonical_window 把大的排在前面还是后面取决于它们的 id。"
                 f"排序的 key 把 id 混进了值（例如 z - eps * id）：差得比 eps × id 之差还小的值就被调换了。先按值排、再按 id（两次稳定排序），"
                 f"不要合成一个 key",
                 f"two different values, {high!r} and {low!r} ({high - low:.3g} apart): whether your canonical_window puts the "
                 f"larger first depends on their ids. Your sort key mixes the ids into the values (e.g. z - eps * id): values "
                 f"closer than eps times their id difference swap. Order by value, then by id (two stable sorts), not by one "
                 f"combined key")


# ---- T3 row_total -------------------------------------------------------------------------------------------
def coarse_units_line(ctx, vocab=50257, small=1e-6):
    """row_total is off the exact sum: a line when, on a row of one weight 1.0 and vocab - 1 weights of `small`, the
    file's row_total is off by more than 1e-6 (relative): units too coarse for the small weights, whose rounding (down,
    or to the nearest unit) adds up over V weights."""
    e = torch.full((1, vocab), small, device=ctx.device)
    e[0, 0] = 1.0
    exact = float(e.double().sum())
    got = _rerun(ctx, "row_total", e)
    if not isinstance(got, torch.Tensor) or got.numel() != 1 or not abs(float(got) - exact) > 1e-6 * exact:
        return None
    off = (float(got) - exact) / (exact - 1.0)
    return ctx.t(f"在一行 1 个 1.0 加 {vocab - 1} 个 {small:g} 的权重上，你的 row_total 给 {float(got):.9g}，精确的和是 {exact:.9g}："
                 f"小权重的质量{'丢了' if off < 0 else '多出'} {abs(off):.1%}。定点数的单位太粗（例如 int32 的单位，或 2**-24 这样的单位），"
                 f"每个小权重都被舍成整数个单位，V 个舍入误差加起来就超过了 1e-6；"
                 f"用 int64，单位尽量细，只要 V × scale 不超过 2**63：scale = 2**(62 - V.bit_length())",
                 f"on a row of one 1.0 and {vocab - 1} weights of {small:g}, your row_total gives {float(got):.9g}, the exact "
                 f"sum is {exact:.9g}: the small weights' mass is {abs(off):.1%} {'short' if off < 0 else 'over'}. The "
                 f"fixed-point unit is too coarse (int32 units, or a unit such as 2**-24): each small weight becomes a whole "
                 f"number of units, and V such roundings add up past 1e-6. Use int64 units as fine as V x scale < 2**63 "
                 f"allows: scale = 2**(62 - V.bit_length())")


# ---- T4 filter_window ----------------------------------------------------------------------------------------
def expected_window(z, top_k, top_p, row_mass, mass=None):
    """float64 oracle of filter_window for one canonical window row: (n_kept, e kept, total). mass: another 100 % for
    top-p than the rule's (to name a mistake)."""
    e = [math.exp(v - z[0]) for v in z]
    n = len(z)
    if top_k > 0:
        kth = z[top_k - 1]
        n = sum(1 for v in z if v >= kth)
    mass = mass if mass is not None else sum(e[:n]) if top_k > 0 else row_mass
    if top_p != float("inf"):
        before = 0.0
        for j in range(n):
            if j > 0 and before >= top_p * mass:
                n = j
                break
            before += e[j]
    return n, e[:n], sum(e[:n])


def window_probe(ctx, z, top_k, top_p, row_mass=None, complete=False):
    """The learner's filter_window on one window row z (a list of floats): (its kept count, its certain), each None
    where the file raises or answers in another shape (it cannot say)."""
    cell = lambda v: torch.tensor([[v]], device=ctx.device)  # noqa: E731
    got = _rerun(ctx, "filter_window", torch.tensor([z], device=ctx.device), cell(top_k), cell(top_p),
                 None if row_mass is None else cell(row_mass), complete)
    answers = []
    for read in (lambda: int((got[0] > 0).sum()), lambda: bool(got[3].flatten()[0])):
        try:
            answers.append(read())
        except Exception:  # noqa: BLE001 - it cannot say
            answers.append(None)
    return tuple(answers)


def float_test_line(ctx, e, cs, total, n_kept):
    """Columns kept past the row's cut, each with a prefix sum equal to the kept total: a kept set decided by comparing
    prefix sums with the kept mass (a float test), not by column position. e, cs: the learner's row [W]; total: its
    float; n_kept: the rule's count."""
    extra = [j for j in range(n_kept, len(e)) if e[j] > 0]
    if not extra or cs[n_kept - 1] != total or any(cs[j] != total for j in extra):
        return None                                          # (the kept mass is the rule's; each extra add moved nothing)
    j = extra[0]
    return ctx.t(f"保留的前缀之后，你还留着第 {extra[:4]} 列（e[{j}] = {e[j]:.3g}），它们的前缀和都等于保留的质量 {bits(total)}："
                 f"你按“前缀和 <= 保留的质量”（一个浮点比较）决定保留集合。比 float32 舍入还小的权重加进去，前缀和不变，于是混了进来"
                 f"（fp16 logits、低温度、top_k 100 时就有这样的权重）。按列的位置决定：第 n_kept 列起全部置 0",
                 f"past the kept prefix you keep columns {extra[:4]} (e[{j}] = {e[j]:.3g}), each with a prefix sum equal to the "
                 f"kept mass {bits(total)}: your kept set is decided by comparing prefix sums with the kept mass (a float "
                 f"test). A weight below the float32 rounding of the sum leaves the prefix sum unchanged and passes it (fp16 "
                 f"logits at a low temperature with top_k 100 have such weights). Decide by column position: zero every "
                 f"column from n_kept on")


def inclusive_mass_line(ctx, z, top_k, top_p, row_mass, kept, n_kept):
    """A row cut by top-p that kept fewer columns than the rule: a line when its count is what a test on the mass up to
    and including each column (cs, not the mass before) gives."""
    if top_p == float("inf") or kept >= n_kept:
        return None
    e = [float(torch.exp(torch.tensor(v - z[0]))) for v in z]
    n_k = sum(1 for v in z if v >= z[top_k - 1]) if top_k > 0 else len(z)
    mass = sum(e[:n_k]) if top_k > 0 else row_mass
    cs = [sum(e[:j + 1]) for j in range(n_k)]
    counts = {max(1, next((j for j, c in enumerate(cs) if c > top_p * mass), n_k)),
              max(1, next((j for j, c in enumerate(cs) if c >= top_p * mass), n_k))}
    if kept not in counts or not _drops_the_crossing_column(ctx):
        return None
    return ctx.t(f"你保留的 {kept} 列正是拿“连同这一列在内的累计质量”（cs）和 top_p × 100% 比较的结果：越过阈值的那一列被删了。"
                 f"要比的是一列“之前”的质量（左边一列的 cs，或 cs - e），跨过阈值的那一列留下",
                 f"your {kept} kept columns are what comparing the mass up to and including each column (cs) with top_p x "
                 f"100 % gives: the column that crosses the threshold was dropped. Compare the mass before a column (cs one "
                 f"column to its left, or cs - e): the crossing column stays")


def _drops_the_crossing_column(ctx) -> bool:
    """Blog bug 1's row, e = [1, 0.5, 0.3, 0.2] (probs [0.5, 0.25, 0.15, 0.1]) with a fifth column below, top_k = 4,
    top_p = 0.7: the rule keeps 2 columns, a test on cs keeps 1. Does the file's filter_window keep 1?"""
    z = torch.log(torch.tensor([[0.5, 0.25, 0.15, 0.1, 0.05]], device=ctx.device))
    col = lambda v, dtype=None: torch.tensor([[v]], dtype=dtype, device=ctx.device)  # noqa: E731
    got = _rerun(ctx, "filter_window", z, col(4, torch.long), col(0.7), None, False)
    return got is not None and int((got[0] > 0).sum()) == 1


def row_mass_line(ctx, z, top_k, top_p, row_mass, e, window_mass_count):
    """A top-p-only row kept the wrong count: a line when the learner's filter_window gives the same e for another
    row_mass (it ignores row_mass); window_mass_count: how many columns top-p keeps against the window's own mass."""
    if top_k != 0 or top_p == float("inf") or row_mass <= 0:
        return None
    col = lambda v, dtype=None: torch.tensor([[v]], dtype=dtype, device=ctx.device)  # noqa: E731
    other = _rerun(ctx, "filter_window", z, col(0, torch.long), col(top_p), col(row_mass * 4.0), False)
    if other is None or not torch.equal(other[0][0].cpu(), e.cpu()):
        return None
    kept = int((e > 0).sum())
    if window_probe(ctx, z[0].tolist(), 0, float("inf"), row_mass)[0] in (kept, None):    # top-p off keeps as many:
        return None                                                                      # top-p is not what cuts
    window = float(torch.exp(z[0] - z[0, 0]).double().sum())
    return ctx.t(f"你的 filter_window 在 row_mass = {row_mass:.4g} 和 {row_mass * 4:.4g} 时给出同样的 e：它没用 row_mass。只开 top-p 的行"
                 f"（top_k 0），top-p 的 100% 就是 row_mass：整行（全部 V 个 token）的质量"
                 + (f"；你保留的 {kept} 列正是拿窗口自己的质量（{window:.4g}）当 100% 的结果" if kept == window_mass_count else ""),
                 f"your filter_window gives the same e for row_mass = {row_mass:.4g} and {row_mass * 4:.4g}: it ignores "
                 f"row_mass. For a top-p-only row (top_k 0), top-p's 100 % is row_mass: the mass of the whole row, all V tokens"
                 + (f"; your {kept} kept columns are what the window's own mass ({window:.4g}) as 100 % gives"
                    if kept == window_mass_count else ""))


def top_k_off_line(ctx, z, top_k, top_p, row_mass, kept, n_kept):
    """A top-p-only row (top_k 0) that kept fewer columns than p08, and as few with top_p off too: a line saying
    top_k 0 was taken as a count, not as 'off'."""
    if top_k != 0 or kept >= n_kept or window_probe(ctx, z, 0, float("inf"), row_mass)[0] != kept:
        return None
    return ctx.t(f"top_k 为 0（关）、top_p 也关掉（inf）时，你的 filter_window 仍只保留窗口 {len(z)} 列里的 {kept} 列：两个都关时每一列都留下"
                 "（top_k = 0 表示不开 top-k，不是要保留的个数）", f"with top_k 0 (off) and top_p off too (inf), your filter_window "
                 f"still keeps only {kept} of the window's {len(z)} columns: with both off every column stays (top_k = 0 "
                 "means top-k is off, not a count to keep)")


def complete_line(ctx, z, k, p, m, e_row, n_kept):
    """A complete window whose e keeps weight past the cut: a line when the same call with complete=False zeroes it (the
    complete case returns before the zeroing)."""
    again = _rerun(ctx, "filter_window", z, k, p, m, False)
    if again is None or not isinstance(again, tuple) or not isinstance(again[0], torch.Tensor):
        return None
    e = again[0].cpu()
    if not (bool((e[0, n_kept:] == 0).all()) and bool((e[0, :n_kept] > 0).all())) or not bool((e_row[n_kept:] != 0).any()):
        return None
    return ctx.t("同样的输入配 complete=False，你的 e 在保留的前缀之后就是 0；complete=True 时不是：complete 的分支在置 0 之前就返回了。"
                 "complete 只决定 certain（全为 True），保留集合、置 0 和 total 照样算",
                 "the same input with complete=False gives e zeroed after the kept prefix; with complete=True it does not: "
                 "the complete branch returns before the zeroing. complete decides certain only (all True); the kept set, "
                 "the zeros and total are computed as always")


def tied_kth_cut_line(ctx, z, top_k, kept, n_kept, certain, row_mass):
    """A row whose values tied with the k-th run past column k - 1 kept exactly top_k columns where p08 keeps them
    all: a line naming the tie rule when the file's filter_window cuts a second such row at top_k too, else None.
    certain: the row's expected certain (False: the line adds that e follows the rules in such a row as well);
    row_mass: what the failing call passed (None or a tensor), passed again."""
    if top_k <= 0 or kept != top_k or n_kept <= top_k or z[top_k] != z[top_k - 1]:
        return None
    again = None if row_mass is None else 0.0                                            # top-k on: unused
    if window_probe(ctx, [4.0, 3.0, 1.0, 1.0, 1.0, 0.0, -1.0], 3, float("inf"), again)[0] != 3:   # p08 keeps 5
        return None
    also = ctx.t("；这一行不 certain，但 e、cs 和 total 在每一行都照 P08 的规则算",
                 "; this row is not certain, yet e, cs and total follow p08's rules in every row") if not certain else ""
    return ctx.t(f"你正好保留 top_k = {top_k} 列，而第 {top_k}..{n_kept - 1} 列的值与第 k 大的值（{bits(z[top_k - 1])}）相等："
                 f"top-k 留下 >= 第 k 大的值的每一列，相等的也留下（这里 P08 保留 {n_kept} 列）{also}",
                 f"you keep exactly top_k = {top_k} columns, but columns {top_k}..{n_kept - 1} equal the k-th value "
                 f"({bits(z[top_k - 1])}): top-k keeps every value >= the k-th, ties included (p08 keeps {n_kept} columns "
                 f"here){also}")


def kth_one_column_late_line(ctx):
    """A line when the file's filter_window keeps one column too many on a row that top-k alone cuts (z = [3, 2, 1, 0,
    -1], top_k = 2, no ties): the k-th value read at column k, not k - 1. Else None."""
    if window_probe(ctx, [3.0, 2.0, 1.0, 0.0, -1.0], 2, float("inf"))[0] != 3:
        return None
    return ctx.t("在 z = [3, 2, 1, 0, -1]、top_k = 2（没有并列）上你的 filter_window 保留了 3 列：第 k 大的值在第 k - 1 列"
                 "（z[:, k - 1]，从 0 数）；你读的是第 k 列",
                 "on z = [3, 2, 1, 0, -1] with top_k = 2 (no ties) your filter_window keeps 3 columns: the k-th value is at "
                 "column k - 1 (z[:, k - 1], counting from 0); yours reads column k")


def weight_space_line(ctx, z, top_k, kept, n_kept):
    """A top-k row that kept as many columns as there are weights e >= the k-th's weight, where values below the k-th
    have weights that round to the k-th's: a line saying top-k compares values, not weights. Else None."""
    if top_k <= 0 or kept <= n_kept:
        return None
    e = torch.exp(torch.tensor(z, dtype=torch.float32) - z[0]).tolist()                 # the row's float32 weights
    if kept != sum(1 for w in e if w >= e[top_k - 1]):
        return None
    below = [j for j in range(len(z)) if z[j] < z[top_k - 1] and e[j] >= e[top_k - 1]]
    if not below:                                                     # no value below the k-th shares its weight
        return None
    cols = (f"{below[0]}", f"column {below[0]} holds a value", "whose weight rounds") if len(below) == 1 else \
        (f"{below[0]}..{below[-1]}", f"columns {below[0]}..{below[-1]} hold values", "whose weights round")
    return ctx.t(f"你保留的列数正好是权重 e >= 第 k 大的值的权重（{bits(e[top_k - 1])}）的列数：第 {cols[0]} 列的值比第 k 大的值"
                 f"（{bits(z[top_k - 1])}）小，权重却舍入成同一个 float32。top-k 比较的是值 z，不是权重 e",
                 f"you keep as many columns as there are weights e >= the k-th's weight ({bits(e[top_k - 1])}): {cols[1]} "
                 f"below the k-th ({bits(z[top_k - 1])}) {cols[2]} to the same float32. Top-k compares the "
                 f"values z, not the weights e")


def reaches_line(ctx, z, top_k, top_p, row_mass, kept, n_kept, complete):
    """A row that kept one column past p08's cut, whose mass before is exactly top_p of the 100 %: a line when the
    file drops that column once top_p is a little lower (it drops when the mass before passes top_p, not when it
    reaches it). Else None."""
    if top_p == float("inf") or kept != n_kept + 1:
        return None
    hundred = expected_window(z, top_k, float("inf"), row_mass)[2] if top_k > 0 else row_mass   # top-p's 100 %
    before = sum(expected_window(z, top_k, top_p, row_mass)[1])                              # the kept mass
    if abs(before - top_p * hundred) > 1e-6 * hundred:
        return None
    lower = top_p * (1 - 1e-3)
    if window_probe(ctx, z, top_k, lower, None if top_k > 0 else row_mass, complete)[0] != n_kept:
        return None
    return ctx.t(f"在 top_p = {top_p:g} 时你保留了第 {n_kept} 列，它之前的质量（{before:.6g}）正好是 100 %（{hundred:.6g}）的 top_p 倍；"
                 f"top_p 稍低（{lower:.6g}）时你就删掉它：你在之前的质量超过 top_p 时才删，P08 在它达到 top_p（>=）时就删",
                 f"at top_p = {top_p:g} you keep column {n_kept}, whose mass before ({before:.6g}) is exactly top_p of the "
                 f"100 % ({hundred:.6g}); at a slightly lower top_p ({lower:.6g}) you drop it: you drop once the mass "
                 f"before passes top_p, p08 drops once it reaches it (>=)")


def top_p_off_as_one_line(ctx, z, top_k, top_p, kept, n_kept):
    """A top-k row with top-p off (inf) that kept fewer columns than top-k: a line when the count is what top_p = 1
    gives in float32 (a column too light to move the float32 prefix sum has mass before = the 100 %), the file keeps
    the same count at top_p = 1 and the whole top-k set at top_p = 2 (inf alone is read as 1). Else None."""
    if top_k <= 0 or top_p != float("inf") or kept >= n_kept:
        return None
    cs = torch.exp(torch.tensor(z, dtype=torch.float32) - z[0]).cumsum(0).tolist()      # float32 prefix sums
    at_one = 1 + next((j for j in range(n_kept - 1) if cs[j] >= cs[n_kept - 1]), n_kept - 1)
    if kept != at_one or window_probe(ctx, z, top_k, 1.0)[0] != kept or window_probe(ctx, z, top_k, 2.0)[0] != n_kept:
        return None                                          # (at top_p 2 nothing reaches: a floor would still drop)
    return ctx.t(f"top_p 是 inf（关），你却只保留 {kept} 列，和 top_p = 1 时一样：第 {kept} 列的权重太轻，加进 float32 的前缀和也不改变它，"
                 f"于是它之前的质量（{bits(cs[kept - 1])}）就“达到”了 100 %。top_p = inf 表示不开 top-p（什么都不比），不是 top_p = 1",
                 f"top_p is inf (off), yet you keep {kept} column{'s' * (kept > 1)}, as with top_p = 1: column {kept} is too light to move the "
                 f"float32 prefix sum, so its mass before ({bits(cs[kept - 1])}) 'reaches' the 100 %. top_p = inf means "
                 f"top-p is off (compare nothing), not top_p = 1")


def value_cut_line(ctx, z, kept, n_kept):
    """A row that kept columns past p08's cut, each equal to the last kept value: a line when the file keeps a run cut
    by top-p whole on a second, top-p-only row too (the zeroing goes by value, z >= the last kept value). Else None."""
    if kept <= n_kept or z[n_kept] != z[n_kept - 1] or kept != sum(1 for v in z if v >= z[n_kept - 1]):
        return None
    row = [3.0, 2.0, 2.0, 2.0, 1.0, 0.0]                     # top-p only, 0.5 of its mass: p08 keeps 2, the run is 1..3
    if window_probe(ctx, row, 0, 0.5, sum(math.exp(v - 3.0) for v in row))[0] != 4:
        return None                                          # (top-p ignored would keep all 6)
    cols = f"{n_kept}" if kept == n_kept + 1 else f"{n_kept}..{kept - 1}"
    return ctx.t(f"你还留着第 {cols} 列：它们与最后保留的值（第 {n_kept - 1} 列，{bits(z[n_kept - 1])}）相等，但 top-p "
                 f"在第 {n_kept - 1} 列之后就切开了这串值。你按值置 0（z >= 最后保留的值）；要按列的位置：第 n_kept 列起全部置 0",
                 f"you also keep {'columns' if kept > n_kept + 1 else 'column'} {cols}: "
                 f"{'they equal' if kept > n_kept + 1 else 'it equals'} the last kept value (column {n_kept - 1}, "
                 f"{bits(z[n_kept - 1])}), but top-p cut that run after column {n_kept - 1}. Your zeroing goes by value "
                 f"(z >= the last kept value); go by column position: zero every column from n_kept on")
