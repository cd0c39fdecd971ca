"""The fast-path notebook's benchmark: what it times, the bar chart of one run, and where the fast path starts to
beat the P08 loop (speed-up over B and V, the crossover marked).

Every figure is drawn from a run in the notebook itself (course.bench.run_case); a case whose figures are noise
(course/bench/machine.py: a busy machine) is drawn hollow and said so in the title.
"""
import math
from itertools import product

from matplotlib import colormaps
from matplotlib.patches import Patch

from course import bench
from course.bench import learner, machine, opcount
from course.lang import pick
from course.notebook.bench_view import LABELS
from course.notebook.plotting import fig_text, new_figure
from course.notebook.text import LINE_COLUMNS, wrap

# the table: seed 004's case first, its V swept up to Qwen's 151936, and a small batch where the loop wins
TABLE_CASES = [("seed 004: k40 p.9", 64, 50257, "seed004", "peaked"),
               ("V sweep", 64, 4096, "seed004", "peaked"),
               ("V sweep", 64, 151936, "seed004", "peaked"),
               ("heterogeneous", 8, 4096, "mixed", "peaked")]
# the crossover figure: seed 004's mix over B and V, the loop against the fast path (the floor: for the noise check)
GRID_B = (1, 2, 4, 16, 64)
GRID_V = (1024, 4096, 50257, 151936)
GRID_METHODS = ("reference", "fast", "floor")
REPEAT, BUDGET_S = 3, 0.3          # a few rounds each: the notebook is run by the self-tests too

COLORS = bench.COLORS
V_NAMES = {50257: "GPT-2", 151936: "Qwen", 32000: "Llama 2"}


def learner_impl(fast, lang="zh"):
    """(impl, line): mine/'s FastSampler for run_case once it runs (course.bench.learner.load), else None; the
    line says which, in the notebook's language. The file is found from the repo root: the notebook's kernel runs
    in notebooks/ or notebooks/en/, a script from anywhere."""
    if not fast.yours("FastSampler"):
        return None, pick(lang, f"{fast.mine_path} 还不能运行：只计时课程自带的写法",
                          f"{fast.mine_path} does not run yet: the course's samplers only")
    try:
        impl = learner.load(learner.repo_file(fast.mine_path))          # from the repo root, wherever the kernel runs
    except learner.LearnerError as error:                # printed: wrapped to the page (a path stays whole)
        text = pick(lang, f"不计时你的文件：{error.text(lang)}", f"yours is not timed: {error}")
        return None, wrap(text, LINE_COLUMNS, indent="", break_long=False)
    return impl, learner.yours_line(impl[0], lang)


# how each cell's output marks a noisy case, for the verdict (zh, en)
TABLE_MARKS = ("表里标 ~ 并为灰色，柱状图里空心", "~ and grey in the table, hollow bars in the chart")
GRID_MARKS = ("图里的空心点", "hollow points in the chart")


def time_cases(cases, impl=None, methods=bench.METHODS, lang="zh", repeat=REPEAT, budget_s=BUDGET_S,
               marks=TABLE_MARKS, known=()):
    """(results, lines): run_case for each case (yours too when impl is given; a LearnerError drops yours and
    becomes one line), then the run's one verdict on the machine (machine.verdict: others' CPU use while timing,
    the cases that are noise among results and `known`, results shown beside them, named by `marks`) and, if
    yours printed, a line saying so."""
    results, lines = [], []
    with machine.Watch() as watch:
        for case in cases:
            try:
                results.append(bench.run_case(*case, methods=methods, repeat=repeat, budget_s=budget_s, impl=impl))
            except learner.LearnerError as error:
                impl = None
                lines.append(pick(lang, f"不再计时你的文件：{error.text(lang)}", f"yours is timed no further: {error}"))
                results.append(bench.run_case(*case, methods=methods, repeat=repeat, budget_s=budget_s))
    notes = [machine.verdict([*known, *results], watch.load, lang, marks), learner.printed_note(results, lang)]
    return results, lines + [note for note in notes if note]


def markdown(lines) -> str:
    """Lines as Markdown paragraphs; the noise mark escaped (a pair of ~ would strike the text between through)."""
    return "\n\n".join(line.replace(machine.NOISY_MARK, "\\" + machine.NOISY_MARK) for line in lines if line)


def draw_bench(results, lang="zh"):
    """Grouped bars (log scale): median ms per method and case; the legend above the axes, never on a bar."""
    methods = [m for m in (*bench.METHODS[:4], "yours", "floor") if any(m in r["ms"] for r in results)]
    fig = new_figure(390)
    ax = fig.add_subplot()
    width = 0.84 / len(methods)
    for j, m in enumerate(methods):
        xs = [i + (j - (len(methods) - 1) / 2) * width for i in range(len(results))]
        heights = [r["ms"].get(m, math.nan) for r in results]
        noisy = [machine.noisy(r) for r in results]
        ax.bar(xs, heights, width, color=[COLORS[m] if not n else "white" for n in noisy], edgecolor=COLORS[m])
    ax.set_yscale("log")
    ax.set_ylabel(fig_text(lang, "每次 sample() 的中位数 ms", "median ms per sample() call"), fontsize=10)
    ax.set_xticks(range(len(results)), [fig_text(lang, bench.case_name(r["name"], "zh"), r["name"]) +
                                        f"\nB={r['B']}\nV={r['V']}" for r in results], fontsize=9)
    ax.tick_params(axis="y", labelsize=9)
    ax.legend([Patch(color=COLORS[m]) for m in methods], [fig_text(lang, *LABELS[m]) for m in methods], fontsize=9,
              ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False, columnspacing=1.0,
              handlelength=1.2)
    if any(machine.noisy(r) for r in results):
        ax.set_title(fig_text(lang, "空心 = 这个场景的数字是噪声，不是速度", "hollow = that case's figures are noise, not speeds"),
                     fontsize=10, pad=40)
    fig._p08_state = {"methods": methods, "cases": [(r["B"], r["V"]) for r in results]}
    return fig


def speedups(results) -> dict:
    """{(B, V): P08 loop ms / fast path ms} for a grid of run_case results."""
    return {(r["B"], r["V"]): r["ms"]["reference"] / r["ms"]["fast"] for r in results}


def crossover(points) -> float | None:
    """The B where speed-up crosses 1, from [(B, speed-up)] ascending in B (log-log interpolation between the
    grid's neighbours): None when it never drops below 1 (it wins at every B), inf when it never reaches 1."""
    if points[0][1] >= 1:
        return None
    for (b0, s0), (b1, s1) in zip(points, points[1:]):
        if s0 < 1 <= s1:
            t = -math.log(s0) / (math.log(s1) - math.log(s0))
            return math.exp(math.log(b0) + t * (math.log(b1) - math.log(b0)))
    return math.inf


def draw_crossover(results, lang="zh"):
    """Speed-up of the fast path over the P08 loop against B, one line per V (log-log); above 1 the fast path wins.
    Each V's crossover (the B where its line crosses 1, from the points that are not noise) is marked; noisy
    points are hollow."""
    fig = new_figure(460)
    ax = fig.add_subplot()
    gains = speedups(results)
    noisy = {(r["B"], r["V"]) for r in results if machine.noisy(r)}
    vocabs = sorted({v for _, v in gains})
    marks = {}
    palette = colormaps["viridis"]
    for k, vocab in enumerate(vocabs):
        color = palette(0.85 * k / max(1, len(vocabs) - 1))
        points = sorted((b, s) for (b, v), s in gains.items() if v == vocab)
        cross = crossover([(b, s) for b, s in points if (b, vocab) not in noisy] or points)   # noise decides nothing
        marks[vocab] = cross
        name = f"V = {vocab}" + (f" ({V_NAMES[vocab]})" if vocab in V_NAMES else "") + ": " + (
            fig_text(lang, "每个 B 都赢", "wins at every B") if cross is None else
            fig_text(lang, "没有赢过", "never wins") if math.isinf(cross) else
            fig_text(lang, f"从 B ≈ {cross:.1f} 起赢", f"wins from B ≈ {cross:.1f}"))
        ax.plot([b for b, _ in points], [s for _, s in points], "-", color=color, label=name)
        for b, s in points:
            ax.plot([b], [s], "o", color=color, mfc="white" if (b, vocab) in noisy else color, ms=6)
        if cross is not None and math.isfinite(cross):
            ax.plot([cross], [1], marker="v", ms=12, color=color, mec="black", zorder=5)
    ax.axhline(1, color="black", lw=1, ls="--")                         # said by the y label, not over a curve
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    low, high = min(min(gains.values()), 0.9), max(max(gains.values()), 1.1)
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if low / 1.5 <= t <= high * 1.5]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    bs = sorted({b for b, _ in gains})
    ax.set_xticks(bs, [str(b) for b in bs])
    ax.set_xlabel(fig_text(lang, "batch 大小 B（每行 top_k 40、top_p 0.9、各自的 seed）",
                           "batch size B (rows: top_k 40, top_p 0.9, own seeds)"), fontsize=10)
    ax.set_ylabel(fig_text(lang, "循环耗时 / 快速路径耗时\n（虚线 1 之上快速路径赢）",
                           "loop time / fast path time\n(above the dashed 1: the fast path wins)"), fontsize=10,
                  linespacing=1.6)
    ax.tick_params(labelsize=9)
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    title = fig_text(lang, "快速路径从哪里开始赢过 P08 循环（▼ = 越过 1 处）",
                     "where the fast path starts to beat the P08 loop (▼)")
    if noisy:
        title += fig_text(lang, "\n空心点是噪声，不是速度", "\nhollow points are noise, not speeds")
    ax.set_title(title, fontsize=10)
    fig._p08_state = {"speedups": gains, "crossover": marks, "noisy": sorted(noisy)}
    return fig


def grid_cases(skip=()):
    """The crossover's cases (seed 004's mix over GRID_B x GRID_V), less the (B, V) in skip."""
    return [("seed 004 mix", b, v, "seed004", "peaked") for v in GRID_V for b in GRID_B if (b, v) not in skip]


def time_grid(table=(), lang="zh"):
    """(results, lines) of the crossover's grid: the loop, the fast path and the floor timed in each case; a grid
    point the table already timed (seed 004's mix, peaked logits) is taken from it, not timed twice."""
    grid = set(product(GRID_B, GRID_V))
    known = [r for r in table if r["mix"] == "seed004" and r["logits"] == "peaked" and (r["B"], r["V"]) in grid]
    results, lines = time_cases(grid_cases({(r["B"], r["V"]) for r in known}), methods=GRID_METHODS, lang=lang,
                                marks=GRID_MARKS, known=known)
    return known + results, lines


def small_case_line(results, lang="zh") -> str:
    """A paragraph on the smallest case of the grid, with its op counts (counted, the same on any CPU): why the loop
    wins there when it did, else the counts and that it did not, or that the case's figures are noise."""
    small = min(results, key=lambda r: (r["V"], r["B"]))
    logits = bench.make_logits(small["B"], small["V"], "peaked")
    ids, params, prev = bench.make_batch(small["B"], small["V"], "seed004")
    counts = opcount.count_methods(bench.method_fns(logits, ids, params, prev, ("reference", "fast")))
    loop, fast = counts["reference"].ops, counts["fast"].ops
    where = pick(lang, f"B = {small['B']}、V = {small['V']} 时", f"at B = {small['B']}, V = {small['V']}")
    ops = pick(lang, f"快速路径每次调用要发 {fast} 个 torch op（路线、窗口、一次同步、一次上传），循环只发 {loop} 个",
               f"the fast path issues {fast} torch ops per call (routes, window, one sync, one upload) against the "
               f"loop's {loop}")
    if machine.noisy(small):
        return pick(lang, f"{where}{ops}；这一次那个场景的数字是噪声。", f"{where[0].upper()}{where[1:]} {ops}; this "
                    "run's figures for that case are noise.")
    if small["ms"]["reference"] >= small["ms"]["fast"]:
        return pick(lang, f"{where}{ops}；这一次循环并没有因此更快。", f"{where[0].upper()}{where[1:]} {ops}; the loop "
                    "was not faster for it this run.")
    return pick(lang, f"小场景里循环赢：{where}{ops}；行越多、词表越大，循环的代价越涨，快速路径的固定开销就越划算。",
                f"The loop wins small cases: {where} {ops}; more rows and a larger vocabulary raise the loop's cost, "
                "and the fast path's fixed cost pays off.")
