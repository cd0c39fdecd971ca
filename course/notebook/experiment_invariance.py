"""The batch-invariance experiment in miniature: one seeded request, many runs, each inside other random and
changing batches; how many distinct completions does each sampler give it?

A published experiment (Thinking Machines Lab, 2025) sent one prompt 1000 times to a large model at
temperature 0: 80 distinct completions, all from the forward pass (its logits changed with the batch); with
batch-invariant kernels, 1. Here the logits are fixed (every row a pure function of request and step,
course/drive.py) and the request samples at temperature 1 with its own seed: whatever varies is the sampler's.
"""
import random

import torch
from matplotlib.figure import Figure

from course import drive
from course.bench.baselines import BlogSampler, fast_sampler, reference_sampler
from course.notebook.bench_figures import COLORS
from course.notebook.plotting import fig_text, new_figure
from course.sampling_params import SamplingParams

RUNS, TOKENS, VOCAB = 100, 20, 512
REQUEST = SamplingParams(top_k=40, top_p=0.9, seed=7)         # q: top-k and top-p on, its own seed, T = 1
REQUEST_ROW_SEED = 3                                           # where q's logits come from (course/drive.py)
GLOBAL_SEED = 0                                                # torch's global RNG at the start of every run


def peer_params(rng: random.Random) -> SamplingParams:
    """A peer as a server sees them: its own temperature, filters and seed (never q's seed 7), or no seed."""
    return SamplingParams(temperature=rng.choice([0.0, 0.7, 1.0, 1.3]), top_k=rng.choice([-1, 5, 40, 300]),
                          top_p=rng.choice([0.8, 0.9, 1.0]), seed=rng.choice([None, rng.randrange(8, 10_000)]))


TRAFFIC = drive.Traffic(make_params=peer_params, max_peers=6, join=0.6, leave=0.3)


def _sample(sampler, logits, ids, params, prev):
    return sampler.sample(logits, ids, params, prev)


def completions(make_sampler, runs=RUNS, tokens=TOKENS, vocab=VOCAB) -> list:
    """q's completion (a tuple of `tokens` ids) in each of `runs` runs, run r inside the batches of traffic seed
    r; every run starts from a fresh sampler and torch's global RNG seeded with GLOBAL_SEED, so only the batches
    differ from run to run. torch's global RNG and its thread count are left as they were found (the rows are
    too short for a second thread to help, and on a busy machine waiting for one costs ten times the work)."""
    out = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            for run in range(runs):
                torch.manual_seed(GLOBAL_SEED)
                got = drive.mixed(make_sampler, _sample, [("q", REQUEST, REQUEST_ROW_SEED)], tokens, vocab, "cpu",
                                  TRAFFIC, seed=run)
                out.append(tuple(got["q"]))
    finally:
        torch.set_num_threads(threads)
    return out


def samplers(fast=None) -> dict:
    """{name: a zero-argument factory}: the blog's, P08's reference loop, the shipped fast path, and the learner's
    FastSampler when `fast` (course.notebook.impl_choice.FastImpl) says it runs."""
    out = {"blog": BlogSampler, "reference": reference_sampler, "fast": fast_sampler}
    if fast is not None and fast.yours("FastSampler"):
        out["yours"] = fast.source["FastSampler"].FastSampler
    return out


def distinct_completions(factories: dict, runs=RUNS, tokens=TOKENS) -> dict:
    """{name: {'distinct': how many different completions, 'top': how many runs gave the most common one}}."""
    out = {}
    for name, make in factories.items():
        seen = completions(make, runs, tokens)
        counts = {}
        for completion in seen:
            counts[completion] = counts.get(completion, 0) + 1
        out[name] = {"distinct": len(counts), "top": max(counts.values()), "runs": runs}
    return out


def draw_distinct(counts: dict, lang="zh", tokens=TOKENS) -> Figure:
    """Horizontal bars: distinct completions of q per sampler, out of its runs (1 = batch invariant)."""
    from course.notebook.bench_view import LABELS
    names = list(counts)
    runs = max(c["runs"] for c in counts.values())
    fig = new_figure(50 * len(names) + 140)
    ax = fig.add_subplot()
    values = [counts[n]["distinct"] for n in names]
    bars = ax.barh(range(len(names)), values, color=[COLORS[n] for n in names], height=0.6)
    ax.set_yticks(range(len(names)), [fig_text(lang, *LABELS[n]) for n in names], fontsize=9)
    ax.tick_params(axis="x", labelsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, runs * 1.12)
    for bar, value in zip(bars, values):
        ax.text(bar.get_width() + runs * 0.01, bar.get_y() + bar.get_height() / 2, str(value), va="center",
                fontsize=10)
    ax.set_xlabel(fig_text(lang, f"请求 q（seed 7）跑 {runs} 次、每次 {tokens} 个 token：\n不同结果的个数（1 = 批不变）",
                           f"request q (seed 7), {runs} runs of {tokens} tokens:\ndistinct completions "
                           "(1 = batch invariant)"), fontsize=10)
    fig._p08_state = {"names": names, "distinct": values}
    return fig


def summary(counts: dict, fast=None, lang="zh") -> str:
    """One or two sentences under the chart: what each sampler gave, and whose FastSampler 'yours' is (or why it
    is not in the chart yet)."""
    from course.lang import pick
    from course.notebook.bench_view import LABELS
    runs = max(c["runs"] for c in counts.values())
    parts = [f"{pick(lang, *LABELS[n])}: {c['distinct']}" for n, c in counts.items()]
    text = pick(lang, f"{runs} 次运行里 q 的不同结果数：" + "，".join(parts) + "。",
                f"q's distinct completions in {runs} runs: " + ", ".join(parts) + ".")
    if fast is not None and "yours" not in counts:
        text += pick(lang, f" 等 {fast.mine_path} 的 FastSampler 能运行了，你的实现也会出现在图里。",
                     f" Yours joins the chart once {fast.mine_path}'s FastSampler runs.")
    elif "yours" in counts and counts["yours"]["distinct"] > 1:
        text += pick(lang, " 你的实现给了不止 1 种结果：它还不是批不变的，`./check.sh p08-fast` 的 I1 会指出哪一步。",
                     " Yours gave more than one: it is not batch invariant yet; I1 of `./check.sh p08-fast` says "
                     "where.")
    return text
