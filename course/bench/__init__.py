"""The p08 benchmark: the reference loop, the full-vocab sort, the blog's way, the fast path and the floor.

    python -m course.bench p08                  # seed 004's case + the sweep (about 3-5 min on 2 CPU cores)
    python -m course.bench p08 --quick          # small sizes, a few seconds
    python -m course.bench p08 --markdown       # the table as Markdown (for docs/benchmark.md)
    python -m course.bench p08 --counts         # only the ops / syncs / uploads per call (no timing; noise-free)
    python -m course.bench p08 --impl mine      # also time mine/p08_sampler_fast.py (or any file): column "yours"
    python -m course.bench p08 --device cuda --png bench_out/p08.png

Every method samples the same batch in the same run; the table gives the median ms per call and the ratio to
the fast path (x30 = thirty times slower than the fast path). A second table gives, per call, the torch ops, the
host syncs and the uploads of Python data (course/bench/opcount.py): noise-free counts that stand in for a GPU's
kernel launches. On a busy machine it times with one thread and marks the cases whose figures are noise
(course/bench/machine.py); a learner's file that cannot be timed gets one line (course/bench/learner.py).
The notebook and the grader call `run_case`.
"""
import argparse
import random
import statistics
import sys
import textwrap
import time

import torch

from course.bench import learner, machine, opcount
from course.bench.baselines import BlogSampler, FullSortSampler, fast_sampler, logits_floor, reference_sampler
from course.sampling_params import SamplingParams

METHODS = ("reference", "full_sort", "blog", "fast", "floor")
LABELS = {"reference": "ref loop", "full_sort": "full sort", "blog": "blog 004", "fast": "fast path",
          "floor": "floor"}       # short: the text table fits 100 columns (docs/benchmark.md explains each)
YOURS = "yours"      # --impl FILE: the learner's FastSampler, timed beside the fast path
COLORS = {"reference": "tab:blue", "full_sort": "tab:brown", "blog": "tab:gray", "fast": "tab:green",
          "yours": "tab:purple", "floor": "#bbbbbb"}       # the charts' colours (the notebook's too)
PEAKED_ALPHA = 1.5   # peaked logits: -alpha * log(rank); top-p 0.9 then keeps ~60 tokens
HEAVY_ALPHA = 1.25   # a heavier tail: top-p 0.9 needs thousands of tokens (the window must widen)

# name, B, V, mix, logits; the default run = seed 004's case, then the sweep
CASES = [
    ("seed 004: k40 p.9", 64, 50257, "seed004", "peaked"),
    ("B sweep", 1, 50257, "seed004", "peaked"),
    ("B sweep", 8, 50257, "seed004", "peaked"),
    ("B sweep", 256, 50257, "seed004", "peaked"),
    ("V sweep", 64, 4096, "seed004", "peaked"),
    ("V sweep", 64, 151936, "seed004", "peaked"),
    ("big", 256, 151936, "seed004", "peaked"),
    ("seed 004, flat logits", 64, 50257, "seed004", "flat"),
    ("top-p only p.9", 1, 50257, "top_p_only", "heavy"),
    ("top-p only p.9", 64, 50257, "top_p_only", "peaked"),
    ("top-p only p.9", 64, 50257, "top_p_only", "heavy"),
    ("top-p only p.9", 64, 50257, "top_p_only", "flat"),
    ("top-p only p.9", 8, 151936, "top_p_only", "peaked"),
    ("heterogeneous", 1, 4096, "mixed", "peaked"),
    ("heterogeneous", 8, 4096, "mixed", "peaked"),
    ("heterogeneous", 64, 50257, "mixed", "peaked"),
    ("heterogeneous", 64, 50257, "mixed", "flat"),
]
# the case names and the logits' shapes in Chinese, for the Chinese notebook (its table, chart and sentences) and
# for a learner's file that fails on a case; a name not listed is shown as it is
CASE_NAMES_ZH = {"seed 004: k40 p.9": "seed 004：k40 p.9", "B sweep": "B 扫描", "V sweep": "V 扫描",
                 "big": "大 batch、大词表", "seed 004, flat logits": "seed 004，平坦 logits",
                 "top-p only p.9": "只开 top-p p.9", "heterogeneous": "异构 batch", "seed 004 mix": "seed 004 的行"}
LOGITS_ZH = {"peaked": "尖峰", "heavy": "长尾", "flat": "平坦", "randn": "随机"}
QUICK_CASES = [
    ("seed 004: k40 p.9", 8, 4096, "seed004", "peaked"),
    ("top-p only p.9", 8, 4096, "top_p_only", "peaked"),
    ("top-p only p.9", 8, 4096, "top_p_only", "flat"),
    ("heterogeneous", 8, 4096, "mixed", "peaked"),
]


def case_name(name: str, lang: str = "en") -> str:
    """A case's name in lang (CASE_NAMES_ZH for zh; numbers and ids stay)."""
    return CASE_NAMES_ZH.get(name, name) if lang != "en" else name


def logits_name(shape: str, lang: str = "en") -> str:
    """A logits shape ('peaked', 'heavy', 'flat') in lang."""
    return LOGITS_ZH.get(shape, shape) if lang != "en" else shape


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _timed(fn, device):
    """Wall-clock ms of one fn() call (synchronised on CUDA)."""
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return (time.perf_counter() - start) * 1e3


def time_ms(fn, repeat=20, warmup=2, budget_s=2.0, device="cpu"):
    """Median wall-clock ms of fn() over up to `repeat` runs after `warmup`; fewer runs when one is slow."""
    return time_many({"fn": fn}, repeat, warmup, budget_s, device)["fn"]


def time_many(fns, repeat=20, warmup=2, budget_s=2.0, device="cpu"):
    """{name: median ms} of time_rounds."""
    return {name: statistics.median(t) for name, t in time_rounds(fns, repeat, warmup, budget_s, device).items()}


def time_rounds(fns, repeat=20, warmup=2, budget_s=2.0, device="cpu"):
    """{name: [ms of each timed call]}: the callables take turns, so a busy machine slows them all alike.

    Each gets `warmup` untimed calls, then up to `repeat` timed ones while its time stays within budget_s
    (at least 3); a callable whose first call takes over budget_s / 2 is timed by that call alone. Each round
    takes them in another order (a fixed shuffle), so no callable always follows the same one: a call can pay
    for the memory its predecessor left behind (on the 2-core CPU, in a fixed order, the fast path measured
    11.5 ms on the heterogeneous B = 64 batch right after the blog's sampler, 7.0 ms elsewhere).
    """
    first = {name: _timed(fn, device) for name, fn in fns.items()}              # warm-up 1 + a first look
    times = {name: [t] if t >= budget_s * 1e3 / 2 else [] for name, t in first.items()}
    for name, fn in fns.items():
        for _ in range(warmup - 1 if not times[name] else 0):
            fn()
    rounds = random.Random(0)
    for _ in range(repeat):
        for name, fn in rounds.sample(list(fns.items()), len(fns)):            # this round's order
            spent = times[name]
            if first[name] < budget_s * 1e3 / 2 and (len(spent) < 3 or sum(spent) < budget_s * 1e3):
                spent.append(_timed(fn, device))
    return times


def make_logits(batch, vocab, shape="peaked", dtype=torch.float32, device="cpu", seed=0):
    """[B, V] logits: 'peaked'/'heavy' = -alpha * log(rank) in a random order per row, 'flat' = randn * 0.1."""
    gen = torch.Generator().manual_seed(seed)
    if shape == "flat":
        logits = torch.randn(batch, vocab, generator=gen) * 0.1
    elif shape in ("peaked", "heavy"):
        alpha = PEAKED_ALPHA if shape == "peaked" else HEAVY_ALPHA
        zipf = -alpha * torch.log(torch.arange(1, vocab + 1, dtype=torch.float32))   # [V] by rank
        logits = torch.stack([zipf[torch.randperm(vocab, generator=gen)] for _ in range(batch)])
    elif shape == "randn":
        logits = torch.randn(batch, vocab, generator=gen) * 3
    else:
        raise ValueError(f"unknown logits shape {shape!r} (peaked, heavy, flat, randn)")
    return logits.to(device=device, dtype=dtype)


def make_batch(batch, vocab, mix="seed004", seed=0):
    """(req_ids, params, prev_tokens): 'seed004' = k=40 p=0.9 seeded rows, 'top_p_only', or 'mixed'."""
    rng = random.Random(seed)
    req_ids = [f"req{i}" for i in range(batch)]
    prev = [[] for _ in range(batch)]
    if mix == "seed004":
        params = [SamplingParams(top_k=40, top_p=0.9, seed=1000 + i) for i in range(batch)]
    elif mix == "top_p_only":
        params = [SamplingParams(top_k=-1, top_p=0.9, seed=1000 + i) for i in range(batch)]
    elif mix == "mixed":        # greedy / temperatures / top-k on-off / top-p on-off / penalty / (un)seeded
        params = []
        for i in range(batch):
            params.append(SamplingParams(
                temperature=rng.choice([0.0, 0.7, 1.0, 1.3]),
                top_k=rng.choice([-1, 20, 40, 100]),
                top_p=rng.choice([1.0, 0.9, 0.95]),
                repetition_penalty=rng.choice([1.0, 1.0, 1.2]),
                seed=rng.choice([None, 1000 + i])))
            if params[-1].repetition_penalty != 1.0:
                prev[i] = [rng.randrange(vocab) for _ in range(32)]
    else:
        raise ValueError(f"unknown mix {mix!r} (seed004, top_p_only, mixed)")
    return req_ids, params, prev


def method_fns(logits, req_ids, params, prev_tokens, methods=METHODS, impl=None):
    """{method: zero-argument callable sampling this batch once}; samplers are created once (warm).
    impl: (name, factory) of a learner's FastSampler (course/bench/learner.py), method "yours"."""
    makers = {"reference": reference_sampler, "full_sort": FullSortSampler, "blog": BlogSampler,
              "fast": fast_sampler, YOURS: impl[1] if impl else None}
    fns = {}
    for name in methods:
        if name == "floor":
            fns[name] = lambda: logits_floor(logits)
        else:
            sampler = makers[name]()
            fns[name] = (lambda s: lambda: s.sample(logits, req_ids, params, prev_tokens))(sampler)
    return fns


def run_case(name="seed 004: k40 p.9", batch=64, vocab=50257, mix="seed004", shape="peaked",
             dtype=torch.float32, device="cpu", methods=METHODS, repeat=20, budget_s=2.0, progress=None,
             counts=False, timing=True, impl=None):
    """Time every method on one batch; returns {'name', 'B', 'V', 'mix', 'logits', 'ms': {...}, 'ratio': {...},
    'spread': {...}} (spread: each method's median over its fastest round, see course/bench/machine.py) and, with
    counts=True, 'counts': {method: opcount.Counts} (ops, syncs, uploads per call; timing=False: only those).
    impl: a learner's (name, FastSampler factory) from course.bench.learner.load, timed as method "yours" right
    after the fast path; a first call checks it on this batch (a LearnerError, one line, if it fails)."""
    if impl and YOURS not in methods:
        methods = with_yours(methods)
    logits = make_logits(batch, vocab, shape, dtype, device)
    req_ids, params, prev = make_batch(batch, vocab, mix)
    fns = method_fns(logits, req_ids, params, prev, methods if timing else [m for m in methods if m != "floor"],
                     impl)
    result = {"name": name, "B": batch, "V": vocab, "mix": mix, "logits": shape, "device": str(device)}
    with learner.muted(YOURS in fns) as printed:           # a learner's prints: counted, not shown
        if YOURS in fns:
            where = f"on {name} (B={batch}, V={vocab}, {shape})"
            where_zh = f"在 {case_name(name, 'zh')}（B={batch}，V={vocab}，{logits_name(shape, 'zh')}）上"
            tokens = learner.guarded_call(impl[0], fns[YOURS], f"sample() {where}",
                                          what_zh=f"{where_zh}调用 sample() 时")
            learner.check_tokens(impl[0], tokens, batch, vocab, where, where_zh)
        if timing:
            if progress:
                progress(", ".join(fns))
            rounds = time_rounds(fns, repeat=repeat, budget_s=budget_s, device=device)
            ms = {m: statistics.median(t) for m, t in rounds.items()}
            fast = ms.get("fast")
            result.update(ms=ms, ratio={m: (t / fast if fast else float("nan")) for m, t in ms.items()},
                          spread={m: machine.spread(t) for m, t in rounds.items()})
        if counts:
            result["counts"] = opcount.count_methods({m: fn for m, fn in fns.items() if m != "floor"})
    if YOURS in fns:
        result["printed"] = printed.lines
    return result


def with_yours(methods):
    """methods with "yours" right after the fast path (or last)."""
    methods = [m for m in methods if m != YOURS]
    at = methods.index("fast") + 1 if "fast" in methods else len(methods)
    return tuple(methods[:at]) + (YOURS,) + tuple(methods[at:])


def label(method):
    return LABELS.get(method, method)


NOISY_MARK = machine.NOISY_MARK     # before a case's name: its figures are noise
WIDTH = 100          # the text tables fit this many columns


def format_table(results, methods=METHODS, markdown=False):
    """The results as a table (100 columns, or Markdown): median ms and (ratio to the fast path) per method; a case
    whose floor varied too much across rounds (machine.noisy) is marked with NOISY_MARK."""
    if markdown:
        lines = ["| case | B | V | logits | " + " | ".join(label(m) for m in methods) + " |",
                 "|---|--:|--:|---|" + "--:|" * len(methods)]
        for r in results:
            cells = [_cell(r, m).strip().replace(" ", " (", 1) + ")" if m in r["ms"] else "-" for m in methods]
            name = f"{NOISY_MARK} {r['name']}" if machine.noisy(r) else r["name"]
            lines.append(f"| {name} | {r['B']} | {r['V']} | {r['logits']} | " + " | ".join(cells) + " |")
        return "\n".join(lines)
    cells = [[_cell(r, m) if m in r["ms"] else "-" for m in methods] for r in results]
    width = max([len(label(m)) for m in methods] + [len(c) for row in cells for c in row]) + 1
    name_width = max(8, min(17, WIDTH - 18 - width * len(methods)))        # shorter names when columns are many
    head = f"{'case':<{name_width}} {'B':>3} {'V':>6} {'logits':<6}" + "".join(f"{label(m):>{width}}" for m in methods)
    lines = [head, "-" * len(head)]
    for r, row in zip(results, cells):
        name = NOISY_MARK + r["name"][:name_width - 1] if machine.noisy(r) else r["name"][:name_width]
        lines.append(f"{name:<{name_width}} {r['B']:>3} {r['V']:>6} {r['logits']:<6}"
                     + "".join(f"{c:>{width}}" for c in row))
    return "\n".join(lines)


def format_counts(results, methods=METHODS, markdown=False):
    """Ops / syncs / uploads per call, per case and method (the floor is one op, not listed)."""
    shown = [m for m in methods if m != "floor"]
    def cell(r, m):
        c = r.get("counts", {}).get(m)
        return f"{c.ops}/{c.syncs}/{c.uploads}" if c else "-"
    if markdown:
        lines = ["| case | B | V | logits | " + " | ".join(f"{label(m)} ops/syncs/uploads" for m in shown) + " |",
                 "|---|--:|--:|---|" + "--:|" * len(shown)]
        lines += [f"| {r['name']} | {r['B']} | {r['V']} | {r['logits']} | "
                  + " | ".join(cell(r, m) for m in shown) + " |" for r in results]
        return "\n".join(lines)
    head = f"{'case':<17} {'B':>3} {'V':>6} {'logits':<6}" + "".join(f" {label(m):>12}" for m in shown)
    lines = [head, "-" * len(head)]
    lines += [f"{r['name'][:17]:<17} {r['B']:>3} {r['V']:>6} {r['logits']:<6}"
              + "".join(f" {cell(r, m):>12}" for m in shown) for r in results]
    return "\n".join(lines)


def _cell(r, m):
    """'269.2 x52.0': the median ms (4 significant digits at most) and the ratio to the fast path."""
    t = r["ms"][m]
    ms = f"{t:.0f}" if t >= 100 else f"{t:.1f}" if t >= 10 else f"{t:.2f}"
    return f"{ms} {_ratio(r['ratio'][m])}"


def _ratio(x):
    return f"x{x:.0f}" if x >= 100 else f"x{x:.1f}" if x >= 10 else f"x{x:.2f}"


def save_png(results, path, methods=METHODS):
    """A grouped bar chart (log scale) of median ms per case and method."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(results)), 4.5))
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        xs = [i + (j - (len(methods) - 1) / 2) * width for i in range(len(results))]
        ax.bar(xs, [r["ms"].get(m, float("nan")) for r in results], width, label=label(m), color=COLORS.get(m))
    ax.set_yscale("log")
    ax.set_ylabel("median ms per sample() call")
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels([f"{r['name']}\nB={r['B']} V={r['V']}\n{r['logits']}" for r in results], fontsize=7)
    ax.legend(fontsize=8)
    ax.set_title(f"p08 samplers, {results[0]['device'] if results else ''}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.bench", description=__doc__.splitlines()[0])
    parser.add_argument("problem", choices=["p08"], help="the problem to benchmark")
    parser.add_argument("--quick", action="store_true", help="small sizes only (a few seconds)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--png", metavar="FILE", help="also save a bar chart (matplotlib, Agg)")
    parser.add_argument("--soak", type=int, nargs="?", const=20000, metavar="STEPS",
                        help="instead of timing: a continuous-batching soak of both samplers (default 20000 steps)")
    parser.add_argument("--repeat", type=int, default=None, help="max timed runs per method (default 20, quick 5)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--counts", action="store_true",
                        help="only count torch ops, host syncs and uploads per call (no timing: noise-free)")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="torch CPU threads for every method (default: torch's, one per core, or 1 when other "
                             "programs keep the CPU busy: a method then never waits for a descheduled thread)")
    parser.add_argument("--impl", metavar="FILE",
                        help="also time your FastSampler: a file, or 'mine' for mine/p08_sampler_fast.py "
                             "(column 'yours', beside the fast path)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no GPU")
    if args.soak and args.impl:
        parser.error("--soak runs the course's two samplers; --impl times a file: use one at a time")
    impl = None
    if args.impl:
        try:
            impl = learner.load(args.impl)
        except learner.LearnerError as error:
            print(f"cannot time it: {error}", file=sys.stderr)
            return 1
    if args.soak:
        from course.bench import simulate
        codes = [simulate.main(["--sampler", name, "--steps", str(args.soak), "--vocab", "4096",
                                "--device", args.device])
                 for name in ("reference", "fast")]
        return max(codes)
    cases = QUICK_CASES if args.quick else CASES
    if args.counts:
        try:
            results = [run_case(*case, device=args.device, counts=True, timing=False, impl=impl) for case in cases]
        except learner.LearnerError as error:
            print(f"cannot time it: {error}", file=sys.stderr)
            return 1
        print(format_counts(results, with_yours(METHODS) if impl else METHODS, markdown=args.markdown))
        print("per sample() call: torch ops / host syncs / uploads of Python data "
              "(torch's profiler; the same on any CPU for one torch version)")
        return 0
    repeat = args.repeat or (5 if args.quick else 20)
    budget = 0.3 if args.quick else 2.0
    methods = with_yours(METHODS) if impl else METHODS
    with machine.timing_threads(args.threads) as threads_line:
        print(f"p08 benchmark on {_machine(args.device)}, torch {torch.__version__}, "
              f"{torch.get_num_threads()} thread{'s' if torch.get_num_threads() != 1 else ''}", flush=True)
        print(threads_line, flush=True)
        if impl:
            print(learner.yours_line(impl[0]), flush=True)
        results = []
        start = time.perf_counter()
        live = sys.stderr.isatty()                   # a terminal: one line rewritten; else one line per step
        try:
            with machine.Watch() as watch:           # others' CPU use while timing, for the verdict
                for n, (name, batch, vocab, mix, shape) in enumerate(cases, 1):
                    def progress(method, n=n):
                        text = f"[{n}/{len(cases)}] {name} B={batch} V={vocab} {shape}: timing {method}"
                        print(f"\r{text:<99}" if live else text, end="" if live else "\n", file=sys.stderr,
                              flush=True)
                    results.append(run_case(name, batch, vocab, mix, shape, device=args.device, repeat=repeat,
                                            budget_s=budget, progress=progress, counts=True, impl=impl))
        except learner.LearnerError as error:
            print(f"{chr(13) if live else ''}cannot time it: {error}", file=sys.stderr)
            return 1
        if live:
            print(f"\r{'':<99}\r", end="", file=sys.stderr, flush=True)
    print(format_table(results, methods, markdown=args.markdown))
    print(f"median ms per sample() call, (xN) = N times the fast path; {time.perf_counter() - start:.0f} s")
    print(textwrap.fill(machine.verdict(results, watch.load), WIDTH))     # the run's one verdict on the machine
    print((learner.printed_note(results) + "\n") if learner.printed_note(results) else "")
    print(format_counts(results, methods, markdown=args.markdown))
    print("per sample() call: torch ops / host syncs / uploads of Python data "
          "(torch's profiler; the same on any CPU for one torch version)")
    from course.bench import hostwork            # the fast path's host work per row, a figure of its own
    print(hostwork.report())
    if args.png:
        save_png(results, args.png, methods)
        print(f"chart: {args.png}")
    return 0


def _machine(device):
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name()
    import platform
    import os
    return f"CPU {platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


if __name__ == "__main__":
    sys.exit(main())
