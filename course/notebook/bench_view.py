"""The fast-path notebook's benchmark table as HTML (the text table is too wide for a notebook), and the findings
under it: one paragraph per sampler that beat the fast path somewhere, in full sentences, saying why where the
design predicts it. A case whose figures are noise (course/bench/machine.py) is marked; the learner's column
'yours' follows the fast path's. Case names and logits shapes are shown in the notebook's language
(course.bench.case_name, logits_name)."""
import html

from course.bench import case_name, logits_name, machine
from course.lang import pick

METHODS = ("reference", "full_sort", "blog", "fast", "floor")   # course.bench's order
LABELS = {"reference": ("参考解逐行循环", "reference loop"), "full_sort": ("全词表排序", "full sort"),
          "blog": ("博客写法（有 bug）", "blog (buggy)"), "fast": ("快速路径", "fast path"),
          "floor": ("下限 amax(-1)", "floor amax(-1)"), "yours": ("你的 mine/", "yours (mine/)")}
# the table's column heads, in parts a line break may come between (never inside a part, so a narrow page breaks
# a head between words, not inside one); joined they read as LABELS
HEADS = {"reference": (("参考解", "逐行循环"), ("reference", "loop")), "full_sort": (("全词表", "排序"), ("full", "sort")),
         "blog": (("博客写法", "（有 bug）"), ("blog", "(buggy)")), "fast": (("快速路径",), ("fast", "path")),
         "floor": (("下限", "amax(-1)"), ("floor", "amax(-1)")), "yours": (("你的", "mine/"), ("yours", "(mine/)")),
         "case": (("场景",), ("case",)), "size": (("B×V",), ("B×V",)), "logits": (("logits",), ("logits",))}
NAMES = {"reference": ("参考解的逐行循环", "The reference loop"), "full_sort": ("全词表排序", "The full sort"),
         "blog": ("博客的写法（有 bug）", "The blog's code (buggy)")}   # a finding's subject
# method that beat the fast path -> (where the design predicts it, why: one sentence each language)
WHY = {
    "blog": (lambda r: True,
             ("它做的事少，是因为它是错的：整批只用第一行的参数、只抽一次全局随机数、不做 penalty。",
              "It does less work because it is wrong: one parameter set and one global draw for the whole batch, "
              "and no penalty.")),
    "reference": (lambda r: r["B"] <= 8 and r["V"] <= 4096,
                  ("batch 和词表都小时，每行要做的事很少，逐行循环的几次小运算比快速路径固定的几遍额外计算"
                   "（路线、窗口、整行质量、一次同步）更便宜。",
                   "With a small batch and vocabulary a row has so little work that the loop's few small ops cost "
                   "less than the fast path's fixed extra passes (the routes, the window, the full-row mass, the one "
                   "sync).")),
    "full_sort": (lambda r: r.get("mix") == "top_p_only" or r["logits"] == "flat",
                  ("保留集合几乎是整个词表（平坦的 logits、只开 top-p）时窗口不 certain：快速路径算完窗口还要走精确路线"
                   "（整行分桶、整数求和），每行多读几遍 V，一次整行排序可能并不比这慢。",
                   "When the kept set is most of the vocabulary (flat logits, top-p only) the window is not certain: "
                   "the fast path computes the window, then the exact route (buckets and integer sums over the whole "
                   "row), a few more passes over V, which one full sort can match.")),
}
UNEXPECTED = ("快速路径的设计没有预料到这一点；再运行这一格，看它是否还成立。",
              "The fast path's design does not predict that; run this cell again to see whether it holds.")


def losing_cases(results, methods=METHODS) -> list:
    """[(result, method)] where a real sampler (not the floor, not yours) was faster than the fast path, in the
    cases whose figures are not noise."""
    return [(r, m) for r in results if not machine.noisy(r) for m in methods if m not in ("fast", "floor", "yours")
            and r["ms"].get(m) is not None and r["ms"].get("fast") and r["ms"][m] < r["ms"]["fast"]]


def _case(r, lang="en") -> str:
    """'V sweep (B=64, V=4096, peaked)', or in Chinese 'V 扫描（B=64，V=4096，尖峰）'."""
    name, shape = case_name(r["name"], lang), logits_name(r["logits"], lang)
    return pick(lang, f"{name}（B={r['B']}，V={r['V']}，{shape}）", f"{name} (B={r['B']}, V={r['V']}, {shape})")


def _listed(items, lang) -> str:
    """'a', 'a and b', 'a, b and c' (Chinese: 、 and 和)."""
    if len(items) < 2:
        return "".join(items)
    return pick(lang, "、".join(items[:-1]) + "和" + items[-1], ", ".join(items[:-1]) + " and " + items[-1])


def explain_losses(results, lang="zh") -> str:
    """The findings, one Markdown paragraph each (full sentences): per sampler that beat the fast path, where, and
    why where the design predicts it (the cases where it does not get a paragraph of their own saying so); or that
    none did. Noisy cases are left out (the verdict names them)."""
    lost = losing_cases(results)
    if results and all(machine.noisy(r) for r in results):
        return pick(lang, "这一次没有一个场景的数字是速度，所以看不出谁快。",
                    "No case's figures are speeds in this run, so they say nothing about which sampler is faster.")
    if not lost and any(machine.noisy(r) for r in results):
        return pick(lang, "在数字不是噪声的场景里，快速路径这一次都比其他正确或错误的写法快（下限除外）。",
                    "In every case whose figures are not noise, the fast path beat every other sampler this run "
                    "(the floor aside).")
    if not lost:
        return pick(lang, "这一次，快速路径在每个场景都比其他正确或错误的写法快（下限除外）。",
                    "This run, the fast path beat every other sampler in every case (the floor aside).")
    paragraphs = []
    for method in [m for m in METHODS if any(m == x for _, x in lost)]:
        expected, why = WHY[method]
        where = [r for r, x in lost if x == method]
        for group, reason in (([r for r in where if expected(r)], why), ([r for r in where if not expected(r)],
                                                                         UNEXPECTED)):
            if group:
                cases = _listed([_case(r, lang) for r in group], lang)
                gap = " " if cases[0].isascii() else ""          # a space only beside Latin text: 在 V 扫描…）上
                paragraphs.append(pick(lang, f"{NAMES[method][0]}在{gap}{cases}上比快速路径快。{reason[0]}",
                                       f"{NAMES[method][1]} was faster than the fast path in {cases}. {reason[1]}"))
    return "\n\n".join(paragraphs)


def _ms(t) -> str:
    """Three significant digits at most: 314, 37.3, 3.24, 0.09."""
    return f"{t:.0f}" if t >= 100 else f"{t:.1f}" if t >= 10 else f"{t:.2f}"


def _ratio(r) -> str:
    """Four characters at most: 129, 13, 1.7, 0.75, 0.03."""
    return f"{r:.0f}" if r >= 9.5 else f"{r:.2g}" if r >= 0.1 else f"{r:.1g}"


CELL = "padding:2px 2px;text-align:right;white-space:nowrap"   # one line per cell, whatever the page width
HEAD_CELL = "padding:2px 2px;text-align:right;vertical-align:bottom"
PART = "<span style='white-space:nowrap'>{}</span>"              # a head's part: never broken inside


def head_html(key, lang="zh") -> str:
    """A column head (HEADS) as HTML: its parts kept whole, a line break allowed only between them: at a space
    where a part begins or ends in Latin text, at a <wbr> (no space) between two Chinese parts."""
    parts = HEADS[key][0 if lang != "en" else 1]
    out = PART.format(html.escape(parts[0]))
    for before, part in zip(parts, parts[1:]):
        out += (" " if before[-1].isascii() or part[0].isascii() else "<wbr>") + PART.format(html.escape(part))
    return out


def shown_methods(results, methods=METHODS) -> list:
    """methods, with 'yours' right after the fast path when a result has it."""
    if not any("yours" in r.get("ms", {}) for r in results) or "yours" in methods:
        return list(methods)
    at = list(methods).index("fast") + 1
    return [*methods[:at], "yours", *methods[at:]]


def results_html(results, lang="zh", methods=METHODS) -> str:
    """A compact HTML table: one row per case, median ms per method with (x ratio to the fast path; the floor's
    ms alone); the fast path's column in bold; a cell where a real sampler beats the fast path is shaded; a case
    whose figures are noise (a floor above the fast path included) starts with machine.NOISY_MARK and is greyed.
    Cells never wrap, and a head breaks only between its parts (HEADS), never inside a word. The logits column only
    when the cases' shapes differ (else the caption names the one shape), so the table with 'yours' fits a 1024 px
    window with the file browser open. Case names and logits shapes are in lang."""
    methods = shown_methods(results, methods)
    shapes = {r["logits"] for r in results}              # one shape for every case: said once, in the caption
    head = [head_html(key, lang) for key in ("case", "size", *(["logits"] if len(shapes) > 1 else []), *methods)]
    rows = []
    for r in results:
        mark = f"{machine.NOISY_MARK} " if machine.noisy(r) else ""
        cells = [html.escape(mark + case_name(r["name"], lang)), f"{r['B']}×{r['V']}",
                 *([html.escape(logits_name(r["logits"], lang))] if len(shapes) > 1 else [])]
        for m in methods:
            t = r["ms"].get(m)
            if t is None:
                cells.append("-")
                continue
            ratio = r["ratio"][m]
            text = f"{_ms(t)} <span style='color:#666'>×{_ratio(ratio)}</span>"
            if m == "floor":                       # no sampler: its ratio says nothing, its ms is the floor
                text = _ms(t)
            elif m == "fast":
                text = f"<b>{_ms(t)}</b>"
            elif ratio < 1 and not mark:             # faster than the fast path, in a case that is not noise
                text = f"<span style='background:#fde2c4'>{text}</span>"
            cells.append(text)
        grey = " style='color:#999'" if mark else ""
        rows.append(f"<tr{grey}>" + "".join(f"<td style='{CELL}'>{c}</td>" for c in cells) + "</tr>")
    caption = pick(lang, "每格：中位数 ms，×N 是相对快速路径的倍数（下限只有 ms）；底色：比快速路径快的真实写法",
                   "Each cell: median ms, ×N relative to the fast path (the floor: ms only); shaded: a real sampler "
                   "faster than the fast path")
    if len(shapes) == 1:
        shape = logits_name(next(iter(shapes)), lang)
        caption = pick(lang, f"logits 都是{shape}的。", f"Every case's logits are {shape}. ") + caption
    if any(machine.noisy(r) for r in results):
        caption += pick(lang, f"；{machine.NOISY_MARK} 灰色：噪声，不是速度", f"; {machine.NOISY_MARK} grey: noise, not a speed")
    return ("<div style='overflow-x:auto'><table style='font-size:11px;table-layout:auto;width:auto;margin:0 0 4px'>"
            f"<caption style='caption-side:bottom;text-align:left;font-size:11px;color:#666'>{caption}</caption>"
            "<thead><tr>" + "".join(f"<th style='{HEAD_CELL}'>{h}</th>" for h in head) +
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")
