"""What the kernel notebook's cells print: each section's probe run the naive way (course/notebook/kernel_demo.py or
a host re-enactment), then the learner's step on the same probe (course/notebook/kernel_impl.py). Each function
returns the lines to print, in the notebook's language; none runs a step that is not written yet."""
import inspect

import numpy as np
import torch

from course import kernel_oracle as oracle
from course import kernel_probes as probes
from course.kernel_interp import OutOfBounds, innermost, recording
from course.lang import pick
from course.notebook import kernel_demo
from course.notebook.panel_search import search_plan
from course.notebook.text import wrap

INF = float("inf")


def show(lines) -> str:
    """The lines to print, each wrapped to the page (course.notebook.text.wrap)."""
    return "\n".join(wrap(line) for line in lines)


def f32(x) -> str:
    """A float32 in the fewest digits that tell it from its neighbours."""
    return str(np.float32(x))


# §0 -------------------------------------------------------------------------------------------------------
def first_kernel(lang, device) -> list:
    """one_block_max's source, and what it gives on three rows of V = 10 with BLOCK = 16."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    x = torch.tensor([[0.5, 2.0, -1.0, 2.0, 1.5, -INF, 0.0, 2.0, 1.0, -3.0],
                      [-1.0] * 10, [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0]], device=device)
    out = torch.empty(3, device=device)
    kernel_demo.one_block_max[(3,)](x, out, 10, BLOCK=16)
    lines = inspect.getsource(kernel_demo.one_block_max.fn).rstrip().splitlines()
    lines.append(t("启动：one_block_max[(3,)](x, out, 10, BLOCK=16)：grid (3,)，3 个 program，每行一个",
                   "launch: one_block_max[(3,)](x, out, 10, BLOCK=16): grid (3,), 3 programs, one per row"))
    lines += [t(f"第 {i} 行 -> {out[i].item():g}（torch：{x[i].max().item():g}）", f"row {i} -> {out[i].item():g} (torch: "
                f"{x[i].max().item():g})") for i in range(3)]
    return lines


def unmasked(lang, device) -> list:
    """The same kernel without its mask, on one row of 10 values and a block of 16."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    x, out = torch.full((1, 10), -1.0, device=device), torch.empty(1, device=device)
    try:
        kernel_demo.one_block_max_unmasked[(1,)](x, out, 10, BLOCK=16)
    except Exception as error:  # noqa: BLE001 - the interpreter's memory check: the point of the cell
        inner = innermost(error)
        if isinstance(inner, OutOfBounds):
            return [t(f"解释器拦下了：{inner.kind} 越界，{inner.name} 的第 {inner.element} 个元素（它只有 {inner.numel} 个）",
                      f"the interpreter stopped it: a {inner.kind} out of bounds, element {inner.element} of "
                      f"{inner.name} (it has {inner.numel})")]
        return [f"{type(inner).__name__}: {inner}"]
    return [t(f"在 GPU 上没有报错：结果 {out.item():g} 来自第 10-15 列之外的内存（这一行的值都是 -1）",
              f"no error on a GPU: the result {out.item():g} comes from memory past column 9 (the row's values "
              f"are all -1)")]


# §1 -------------------------------------------------------------------------------------------------------
def launch_probe(device):
    """A row of V = 3000 alone, and the same row first in a batch of 16."""
    g = torch.Generator().manual_seed(5)
    batch = torch.randn(16, 3000, generator=g) * 2
    return batch[:1].to(device), batch.to(device)


def launch_trap(lang, device) -> list:
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    alone, batch = launch_probe(device)
    a, b = kernel_demo.softmax_rows(alone)[0].cpu(), kernel_demo.softmax_rows(batch)[0].cpu()
    moved = int((a != b).sum())
    return [t(f"单独：BLOCK = {kernel_demo.naive_block(1)}；在 16 行的 batch 里：BLOCK = {kernel_demo.naive_block(16)}",
              f"alone: BLOCK = {kernel_demo.naive_block(1)}; in a batch of 16: BLOCK = {kernel_demo.naive_block(16)}"),
            t(f"同一行的 3000 个概率里有 {moved} 个 bit 不同（总和 {a.double().sum().item():.8f} 与 "
              f"{b.double().sum().item():.8f}）", f"{moved} of the row's 3000 probabilities differ in their bits (sums "
              f"{a.double().sum().item():.8f} and {b.double().sum().item():.8f})")
            if moved else t("这一次两种块大小恰好舍入相同", "this time both block sizes happen to round the same")]


def launch_trap_figure(lang, device):
    """The naive kernel's probabilities of one row, alone against in a batch of 16: their difference per column."""
    from course.notebook.plotting import FONT_PT, REMOVED_COLOR, fig_text, new_figure
    alone, batch = launch_probe(device)
    a, b = kernel_demo.softmax_rows(alone)[0].cpu(), kernel_demo.softmax_rows(batch)[0].cpu()
    diff = (a.double() - b.double()).abs()
    fig = new_figure(200)
    ax = fig.subplots()
    moved = diff > 0
    ax.scatter(torch.arange(len(diff))[moved], diff[moved], s=3, color=REMOVED_COLOR)
    ax.set_yscale("log")
    ax.set_xlabel(fig_text(lang, "列", "column"), fontsize=FONT_PT)
    ax.set_ylabel(fig_text(lang, "|差|", "|difference|"), fontsize=FONT_PT)
    ax.set_title(fig_text(lang, f"朴素 kernel：同一行的 {int(moved.sum())} / {len(diff)} 个概率变了",
                          f"the naive kernel: {int(moved.sum())} of the row's {len(diff)} probabilities moved"),
                 fontsize=FONT_PT)
    ax.tick_params(labelsize=FONT_PT)
    return fig


def launch_config_lines(kernel, lang) -> list:
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    shown = {b: kernel.launch_config(b, 50257) for b in (1, 16, 256)}
    lines = [f"launch_config({b}, 50257) -> {shown[b]}" for b in shown]
    same = len({(g[1:], blk, warps) for g, blk, warps in shown.values()}) == 1
    lines.append(t("每行的 program 在这三个 B 下都一样", "a row's program is the same at these three B") if same else
                 t("一行的 program 随 B 变了", "a row's program changes with B"))
    return lines


def row_max_lines(kernel, lang, device) -> list:
    """The learner's row_max on ties across blocks and on a row of negatives with a masked tail (BLOCK 128)."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    g = torch.Generator().manual_seed(6)
    ties = torch.randn(300, generator=g)
    ties[[7, 131, 290]] = 5.0
    cases = [(t("第 7、131、290 列是相等的最大值", "equal maxima at columns 7, 131, 290"), ties, 1.0),
             (t("全是负值，V = 300", "every value negative, V = 300"), -torch.rand(300, generator=g) - 0.5, 0.7)]
    lines = []
    for label, x, temp in cases:
        z, col = probes.row_max(kernel.row_max, x[None], [temp], 128, device)
        want = oracle.row_max(x, temp)
        ok = float(z[0]) == want[0] and int(col[0]) == want[1]
        lines.append(f"{label}, T = {temp}:")
        lines.append(f"  row_max -> ({f32(z[0])}, {int(col[0])})  torch: ({f32(want[0])}, {want[1]})"
                     + ("  ✓" if ok else "  ✗"))
    return lines


# §2 -------------------------------------------------------------------------------------------------------
def ulp_row():
    """64 floats one ulp apart above 1.0, shuffled among 36 lower values: [100]."""
    steps = [torch.tensor(1.0)]
    for _ in range(63):
        steps.append(torch.nextafter(steps[-1], torch.tensor(2.0)))
    g = torch.Generator().manual_seed(7)
    row = torch.cat([torch.stack(steps), torch.randn(36, generator=g) - 3])
    return row[torch.randperm(100, generator=g)]


def search_lines(lang, passes, ks=(5, 17, 40)) -> list:
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    row, lines = ulp_row(), []
    for k in ks:
        plan = search_plan(row, "top_k", k=k, passes=passes)
        lines.append(t(f"k = {k:2}：{passes} 次 -> {f32(plan['answer'])}，第 k 大是 {f32(plan['exact'])}", f"k = {k:2}: "
                       f"{passes} passes -> {f32(plan['answer'])}, the k-th is {f32(plan['exact'])}")
                     + ("  ✓" if plan["answer"] == plan["exact"] else t(f"  ✗ 不在这一行里，还剩 {plan['keys_left']} 个 key",
                                                                       f"  ✗ not in the row, {plan['keys_left']} keys left")))
    return lines


def kth_lines(kernel, lang, device, ks=(5, 17, 40)) -> list:
    row = ulp_row()
    got = probes.kth(kernel.kth_largest, row[None].expand(len(ks), -1), [1.0] * len(ks), list(ks), 128, device)
    return [f"kth_largest(k={k:2}) -> {f32(v)}  torch.topk: {f32(oracle.kth(row, 1.0, k))}"
            + ("  ✓" if float(v) == oracle.kth(row, 1.0, k) else "  ✗") for k, v in zip(ks, got.tolist())]


# §3 -------------------------------------------------------------------------------------------------------
BLOCKS = (128, 256, 1024)


def mass_row():
    """A flat row: 3000 weights near 1, whose float32 sum rounds differently block by block."""
    return torch.randn(3000, generator=torch.Generator().manual_seed(0)) * 0.05


def naive_mass_lines(lang, device) -> list:
    """The float32 total of exp(z - max), added block by block, at blocks of 128, 256, 1024."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    x = mass_row()[None].to(device)
    totals = [float(kernel_demo.totals(x, block)[0]) for block in BLOCKS]
    lines = [t(f"BLOCK = {b:4}：浮点数的和 {v:.9g}", f"BLOCK = {b:4}: the float sum {v:.9g}") for b, v in zip(BLOCKS, totals)]
    lines.append(t("块大小一变，和的最后几位就变", "another block size, other last digits") if len(set(totals)) > 1 else
                 t("这一次三种块大小恰好舍入相同", "this time the three block sizes happen to round the same"))
    return lines


def mass_lines(kernel, lang, device) -> list:
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    x = mass_row()
    top, scale = oracle.row_max(x, 1.0)[0], oracle.scale_of(len(x))
    got = [int(probes.mass(kernel.mass_at_least, x[None], [1.0], [top], [-INF], scale, b, device)[0]) for b in BLOCKS]
    lines = [f"BLOCK = {b:4}: mass_at_least(-inf) = {m}" for b, m in zip(BLOCKS, got)]
    lines.append(t(f"÷ scale = {got[0] / scale:.9g}；三种块大小是同一个整数", f"/ scale = {got[0] / scale:.9g}; the same "
                   "integer at all three block sizes") if len(set(got)) == 1 else
                 t("三种块大小给出不同的数", "the three block sizes give different numbers"))
    return lines


# §4 -------------------------------------------------------------------------------------------------------
def cut_cases():
    ladder = torch.tensor([5.0, 3.0, 0.0, 3.0, 3.0, -2.0, 3.0, 1.0])
    return [("8 equal values, top_p 0.5", "8 个相等的值，top_p 0.5", torch.zeros(8), 0.5),
            ("8 equal values, top_p 0.25", "8 个相等的值，top_p 0.25", torch.zeros(8), 0.25),
            ("[5, 3, 0, 3, 3, -2, 3, 1], top_p 0.75", "[5, 3, 0, 3, 3, -2, 3, 1]，top_p 0.75", ladder, 0.75)]


def naive_cut_lines(lang) -> list:
    """The cut as 'every column at or above the value where the mass reaches quota' (ties all kept)."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    lines = []
    for en, zh, x, top_p in cut_cases():
        plan = search_plan(x, "top_p", top_p=top_p)
        z = oracle.z_of(x, 1.0)
        w = oracle.numpy_units(z, float(z.max()), oracle.scale_of(len(x)))
        _, last, _ = oracle.top_p_cut(z, w, plan["goal"])
        right = oracle.kept_columns(z, plan["answer"], last)
        lines.append(t(f"{zh}：截断值 {plan['answer']:g}", f"{en}: the cut {plan['answer']:g}"))
        lines.append(t(f"  z >= 它的列 {plan['kept']}", f"  the columns z >= it {plan['kept']}"))
        lines.append(t(f"  规则保留     {right}", f"  the rule keeps     {right}"))
    return lines


def cut_lines(kernel, lang, device) -> list:
    lines = []
    for en, zh, x, top_p in cut_cases():
        z = oracle.z_of(x, 1.0)
        top, scale = float(z.max()), oracle.scale_of(len(x))
        w = probes.units(kernel.units, x[None], [1.0], [top], scale, 128, device)[0].tolist()
        q = oracle.quota(top_p, sum(w))
        cut, last, kept = probes.cut(kernel.top_p_cut, x[None], [1.0], [top], [q], scale, 128, device)
        want = oracle.top_p_cut(z, w, q)
        got = (float(cut[0]), int(last[0]), int(kept[0]))
        lines.append(pick(lang, zh, en) + ":")
        lines.append(f"  top_p_cut -> (cut {got[0]:g}, last {got[1]}, kept {got[2] / scale:g} x scale)"
                     + ("  ✓" if got == want else pick(lang, f"  ✗ 期望 (cut {want[0]:g}, last {want[1]})",
                                                       f"  ✗ expected (cut {want[0]:g}, last {want[1]})")))
    return lines


# §5 -------------------------------------------------------------------------------------------------------
EDGE_U = (0.25, 0.25 - 2.0 ** -40, 1.0 - 2.0 ** -53)
EDGE_NAMES = ("0.25", "0.25 - 2**-40", "1 - 2**-53")


def naive_draw_lines(lang) -> list:
    """On 8 equal values: the draw with u rounded to float32, and without a last column for rounding."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    z = oracle.z_of(torch.zeros(8), 1.0)
    w = oracle.numpy_units(z, 0.0, oracle.scale_of(8))
    kept = sum(w)
    lines = []
    for u, name in zip(EDGE_U, EDGE_NAMES):
        right = oracle.draw(z, w, -INF, 7, kept, u)
        as32 = oracle.draw(z, w, -INF, 7, kept, float(np.float32(u)))
        past = next((c for c in range(8) if sum(w[:c + 1]) > np.float32(u) * np.float32(kept)), 8)
        lines.append(f"u = {name}:")
        lines.append(t(f"  规则 -> 第 {right} 列；u 转成 float32 -> 第 {as32} 列", f"  the rule -> column {right}; "
                       f"u as float32 -> column {as32}"))
        lines.append(t(f"  float32 乘积、没有兜底 -> {'第 ' + str(past) + ' 列' if past < 8 else '没有列（8 = V，出界）'}",
                       f"  a float32 product, no fallback -> "
                       f"{'column ' + str(past) if past < 8 else 'no column (8 = V: past the row)'}"))
    return lines


def draw_lines(kernel, lang, device) -> list:
    z = oracle.z_of(torch.zeros(8), 1.0)
    scale = oracle.scale_of(8)
    w = probes.units(kernel.units, torch.zeros(1, 8), [1.0], [0.0], scale, 128, device)[0].tolist()
    kept = sum(w)
    got = probes.draw(kernel.draw, torch.zeros(3, 8), [1.0] * 3, [0.0] * 3, [-INF] * 3, [7] * 3, [kept] * 3,
                      list(EDGE_U), scale, 128, device).tolist()
    return [f"draw(u = {name}) -> {c}  " + pick(lang, f"规则：第 {oracle.draw(z, w, -INF, 7, kept, u)} 列",
                                            f"the rule: column {oracle.draw(z, w, -INF, 7, kept, u)}")
            + ("  ✓" if c == oracle.draw(z, w, -INF, 7, kept, u) else "  ✗") for u, name, c in zip(EDGE_U, EDGE_NAMES, got)]


# §6 -------------------------------------------------------------------------------------------------------
def whole_kernel_lines(kernel, lang, device, reference) -> list:
    """The whole kernel on a mixed batch of V = 1000: the reference's distribution, a row alone vs in the batch, the
    launches at B = 1 and 8."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    from course import oracle as p08_oracle
    from course.sampling_params import SamplingParams as P
    g = torch.Generator().manual_seed(9)
    x = torch.randn(8, 1000, generator=g) * 2
    params = [P(top_k=40, top_p=0.9, seed=1), P(top_p=0.8, seed=2), P(temperature=0.0), P(top_k=5, seed=3),
              P(temperature=0.7, seed=4), P(top_p=0.95, repetition_penalty=1.3, seed=5), P(top_k=300, seed=6), P(seed=7)]
    prev = [[], [], [], [], [], [1, 2, 3], [], []]
    with recording() as launches:
        probs = kernel.KernelSampler().filtered_probs(x.to(device), params, prev).cpu()
        alone = kernel.KernelSampler().filtered_probs(x[:1].to(device), params[:1], prev[:1]).cpu()
    worst = max((probs[i] - p08_oracle.reference_probs(reference, x[i], params[i], prev[i])).abs().max().item()
                for i in range(8))
    return [t(f"8 行与参考解的最大差：{worst:.1e}（允许 1e-6）", f"the largest difference to the reference over 8 rows: "
              f"{worst:.1e} (allowed 1e-6)"),
            t("第 0 行单独 == 在 batch 里（逐位）：", "row 0 alone == in the batch (bit for bit): ") + str(torch.equal(alone[0], probs[0])),
            *[t(f"启动：{launch.text()}", f"launch: {launch.text()}") for launch in launches]]


def speed_lines(kernel, lang, device) -> list:
    """On a GPU: the kernel beside the fast path and the full sort, seed 004's batch (median ms); on a CPU: why not."""
    t = lambda zh, en: pick(lang, zh, en)                                       # noqa: E731
    if device != "cuda":
        return wrap(t("这里是 CPU：kernel 在 Triton 的解释器里跑，每一条指令都由 Python 执行，它的耗时不是速度数字。"
                      "GPU 上的数字由 .ci/gpu 测量，写在 docs/benchmark.md 里（注明日期、提交和 GPU）。",
                      "This is a CPU: the kernel runs in Triton's interpreter, every instruction executed by Python, so "
                      "its time is no speed figure. The GPU figures are measured by .ci/gpu and written in "
                      "docs/benchmark.md (with their date, commit and GPU).")).split("\n")
    from course import bench
    from course.bench.baselines import FullSortSampler, load_module
    from course.problems import get
    from course.sampling_params import SamplingParams as P
    fast = load_module(get("p08-fast").path("solution"))
    logits = bench.make_logits(64, 50257, "peaked").to(device)
    params, ids, prev = [P(top_k=40, top_p=0.9, seed=i) for i in range(64)], [f"r{i}" for i in range(64)], [[]] * 64
    rows = []
    for name, make in (("kernel", kernel.KernelSampler), ("fast path", fast.FastSampler), ("full sort", FullSortSampler)):
        sampler = make()
        rows.append((name, bench.time_ms(lambda: sampler.sample(logits, ids, params, prev), repeat=20, budget_s=2.0,
                                         device=device)))
    return [t("B = 64，V = 50257，top_k 40，top_p 0.9（seed 004 的 batch），中位数 ms：",
              "B = 64, V = 50257, top_k 40, top_p 0.9 (seed 004's batch), median ms:")] + \
        [f"  {name:10} {ms:8.3f} ms" for name, ms in rows]
