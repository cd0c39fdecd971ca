"""The fast-path notebook's benchmark table as HTML (the text table is too wide for a notebook), and one
sentence per case where the fast path is not the fastest real sampler, saying why. A case whose figures are
noise (course/bench/machine.py) is marked; the learner's column 'yours' follows the fast path's. Case names and
logits shapes are shown in the notebook's language (course.bench.case_name, logits_name)."""
import html

from course.bench import case_name, logits_name, machine
from course.lang import pick

METHODS = ("reference", "full_sort", "blog", "fast", "floor")   # course.bench's order
LABELS = {"reference": ("参考解逐行循环", "reference loop"), "full_sort": ("全词表排序", "full sort"),
          "blog": ("博客写法（有 bug）", "blog (buggy)"), "fast": ("快速路径", "fast path"),
          "floor": ("下限 max(-1)", "floor max(-1)"), "yours": ("你的 mine/", "yours (mine/)")}
# the table's column heads, in parts a line break may come between (never inside a part, so a narrow page breaks
# a head between words, not inside one); joined they read as LABELS
HEADS = {"reference": (("参考解", "逐行循环"), ("reference", "loop")), "full_sort": (("全词表", "排序"), ("full", "sort")),
         "blog": (("博客写法", "（有 bug）"), ("blog", "(buggy)")), "fast": (("快速路径",), ("fast", "path")),
         "floor": (("下限", "max(-1)"), ("floor", "max(-1)")), "yours": (("你的", "mine/"), ("yours", "(mine/)")),
         "case": (("场景",), ("case",)), "size": (("B×V",), ("B×V",)), "logits": (("logits",), ("logits",))}
WHY = {  # method that beat the fast path -> why (one sentence each)
    "blog": ("博客的写法整批只用第一行的参数、只抽一次全局随机数、不做 penalty，也就是少做了每行该做的事，而且结果是错的",
             "the blog's code does less work because it is wrong: one parameter set and one global draw for the "
             "whole batch, no penalty"),
    "reference": ("batch 和词表都小（例如 B = 8、V = 4096）时，每行要做的事太少，逐行循环的几次小运算比快速路径固定的几遍额外计算"
                  "（路线、窗口、整行质量、一次同步）更便宜",
                  "with a small batch and vocabulary (e.g. B = 8, V = 4096) a row has so little work that the loop's few "
                  "small ops cost less than the fast path's fixed extra passes (the routes, the window, the full-row mass, "
                  "the one sync)"),
    "full_sort": ("保留集合几乎是整个词表（平坦的 logits、只开 top-p）时，窗口不 certain，快速路径先算了窗口、再走精确路线"
                  "（整行分桶、整数求和），每行多读几遍 V，一次整行排序可能并不比这慢",
                  "when the kept set is most of the vocabulary (flat logits, top-p only) the window is not certain: "
                  "the fast path computes the window, then the exact route (buckets and integer sums over the whole "
                  "row), a few more passes over V, which one full sort can match"),
}


def losing_cases(results, methods=METHODS) -> list:
    """[(result, method)] where a real sampler (not the floor, not yours) was faster than the fast path, in the
    cases whose figures are not noise."""
    return [(r, m) for r in results if not machine.noisy(r) for m in methods if m not in ("fast", "floor", "yours")
            and r["ms"].get(m) is not None and r["ms"].get("fast") and r["ms"][m] < r["ms"]["fast"]]


def _case(r, lang="en") -> str:
    """'V sweep (B=64, V=4096, peaked)', or in Chinese 'V 扫描（B=64，V=4096，尖峰）'."""
    name, shape = case_name(r["name"], lang), logits_name(r["logits"], lang)
    return pick(lang, f"{name}（B={r['B']}，V={r['V']}，{shape}）", f"{name} (B={r['B']}, V={r['V']}, {shape})")


def explain_losses(results, lang="zh") -> str:
    """One sentence per method that beat the fast path somewhere, naming the cases (or: none)."""
    lost = losing_cases(results)
    if results and all(machine.noisy(r) for r in results):
        return pick(lang, "这一次的数字全是噪声（机器正忙），从中看不出谁快；机器空闲时重新运行这一格。",
                    "This run's figures are all noise (a busy machine): they say nothing about speed; run this cell "
                    "again when the machine is quiet.")
    if not lost and any(machine.noisy(r) for r in results):
        return pick(lang, "这一次，在数字不是噪声的场景里，快速路径都比其他正确或错误的写法快（下限除外）。",
                    "This run: the fast path beat every other sampler in every case whose figures are not noise "
                    "(the floor aside).")
    if not lost:
        return pick(lang, "这一次，快速路径在每个场景都比其他正确或错误的写法快（下限除外）。",
                    "This run: the fast path beat every other sampler in every case (the floor aside).")
    lines = []
    for method in [m for m in METHODS if any(m == x for _, x in lost)]:
        cases = pick(lang, "；", "; ").join(_case(r, lang) for r, x in lost if x == method)
        zh, en = WHY[method] if method in WHY else ("", "")
        lines.append(pick(lang, f"{LABELS[method][0]} 在 {cases} 更快：{zh}。",
                          f"{LABELS[method][1]} was faster in {cases}: {en}."))
    return " ".join(lines)


def _ms(t) -> str:
    """Three significant digits at most: 314, 37.3, 3.24, 0.09."""
    return f"{t:.0f}" if t >= 100 else f"{t:.1f}" if t >= 10 else f"{t:.2f}"


def _ratio(r) -> str:
    return f"{r:.0f}" if r >= 10 else f"{r:.2g}"


CELL = "padding:2px 3px;text-align:right;white-space:nowrap"   # one line per cell, whatever the page width
HEAD_CELL = "padding:2px 3px;text-align:right;vertical-align:bottom"
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
    """A compact HTML table: one row per case, median ms per method with (x ratio to the fast path); the fast
    path's column in bold; a cell where a real sampler beats the fast path is shaded; a case whose figures are
    noise starts with machine.NOISY_MARK and is greyed. Cells never wrap, and a head breaks only between its parts
    (HEADS), never inside a word: a page too narrow for the table scrolls it sideways. Case names and logits shapes
    are in lang."""
    methods = shown_methods(results, methods)
    head = [head_html(key, lang) for key in ("case", "size", "logits", *methods)]
    rows = []
    for r in results:
        mark = f"{machine.NOISY_MARK} " if machine.noisy(r) else ""
        cells = [html.escape(mark + case_name(r["name"], lang)), f"{r['B']}×{r['V']}",
                 html.escape(logits_name(r["logits"], lang))]
        for m in methods:
            t = r["ms"].get(m)
            if t is None:
                cells.append("-")
                continue
            ratio = r["ratio"][m]
            text = f"{_ms(t)} <span style='color:#666'>×{_ratio(ratio)}</span>"
            if m == "fast":
                text = f"<b>{_ms(t)}</b>"
            elif m != "floor" and ratio < 1:
                text = f"<span style='background:#fde2c4'>{text}</span>"
            cells.append(text)
        grey = " style='color:#999'" if mark else ""
        rows.append(f"<tr{grey}>" + "".join(f"<td style='{CELL}'>{c}</td>" for c in cells) + "</tr>")
    caption = pick(lang, "每格：中位数 ms，×N = 相对快速路径的倍数；底色 = 比快速路径快的真实写法",
                   "each cell: median ms, ×N = relative to the fast path; shaded = a real sampler faster than the fast path")
    if any(machine.noisy(r) for r in results):
        caption += pick(lang, f"；{machine.NOISY_MARK} 灰色 = 噪声（机器正忙）", f"; {machine.NOISY_MARK} grey = noise (busy machine)")
    return ("<div style='overflow-x:auto'><table style='font-size:11px;table-layout:auto;width:auto;margin:0 0 4px'>"
            f"<caption style='caption-side:bottom;text-align:left;font-size:11px;color:#666'>{caption}</caption>"
            "<thead><tr>" + "".join(f"<th style='{HEAD_CELL}'>{h}</th>" for h in head) +
            "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")
