"""The fast-path notebook's probes: for each of the five ideas, a naive version and a row it moves (alone vs in its
batch), built the way the grader's checks build theirs (tests/p08_fast: T1-T5, F4, F7, F8).

Every probe runs through the given batch code (course/fast_batch.py) or calls one step function directly; the
notebook passes in the steps it shows (`fast.steps()`: the learner's where they run, else the reference's) and, for
the naive run, the same steps with one function swapped for its naive version.
"""
from contextlib import contextmanager

import torch
from matplotlib.ticker import MaxNLocator

from course import fast_batch, oracle
from course.floats import step_between
from course.fast_batch import WINDOW_K, Routes
from course.notebook.plotting import FONT_PT, KEPT_COLOR, REMOVED_COLOR, fig_text, new_figure
from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams

INF = float("inf")


# ---- step 1: the route ----------------------------------------------------------------------------------
def naive_route(params, vocab):
    """The naive route: the batch's widest top_k decides. One window of the widest top_k + 1 would be too wide
    once any row's top_k passes WINDOW_K, so every top-k row of that batch takes the exact route."""
    widest = max((p.top_k for p in params if 0 < p.top_k < vocab), default=0)
    routes = Routes([], [], [], [], [])
    for i, p in enumerate(params):
        if p.temperature < GREEDY_TEMPERATURE:
            routes.greedy.append(i)
        elif 0 < p.top_k < vocab:
            (routes.exact if widest > WINDOW_K or p.top_k > WINDOW_K else routes.top_k).append(i)
        elif p.top_p < 1:
            routes.top_p.append(i)
        else:
            routes.plain.append(i)
    return routes


def route_probe(vocab=300):
    """F7's row "a clear k-th value, temperature 0.7" (top_k 40) and its peer with top_k = WINDOW_K + 20, built as
    tests/p08_fast/probes.py builds them: (row [V], make(top_p) -> SamplingParams, peer rows [1, V], peer params)."""
    g = torch.Generator().manual_seed(vocab)
    row = torch.randn(vocab, generator=g) * 0.3 - 4.0                                 # [V] a low tail
    row[torch.randperm(vocab, generator=g)[:60]] = torch.linspace(2.5, -1.0, 60)      # 60 spread values
    peer = torch.randn(1, vocab, generator=torch.Generator().manual_seed(vocab + 1)) * 2.0   # [1, V]
    return (row, lambda top_p: SamplingParams(top_k=40, top_p=top_p, temperature=0.7, seed=2), peer,
            [SamplingParams(top_k=WINDOW_K + 20, seed=103)])


def kept(steps, row, params, prev=()) -> int:
    """How many tokens the row alone keeps, through the given batch code with these steps."""
    return int((fast_batch.filtered_batch(steps, row[None], [params], [list(prev)])[0] > 0).sum())


def boundary(steps, row, make, rank):
    """(below, at): the two neighbouring float64 top_p values where the row alone goes from keeping `rank` tokens to
    keeping more (a bisection on the bits, as the grader's F7 places its rows)."""
    params = make(1.0)
    z = torch.sort(row.double() / params.temperature, descending=True).values
    z = z[:params.top_k] if 0 < params.top_k < len(z) else z
    guess = float(torch.softmax(z, -1)[:rank].sum())                                  # float64 mass before
    lo, hi = guess * (1 - 1e-5), guess * (1 + 1e-5)
    low = kept(steps, row, make(lo))
    return step_between(lambda top_p: kept(steps, row, make(top_p)) > low, lo, hi)


def alone_and_beside(steps, row, params, peer_rows, peer_params):
    """(probs alone [V], probs as row 0 beside the peers [V]) through the given batch code."""
    alone = fast_batch.filtered_batch(steps, row[None], [params], [[]])[0]
    batch = fast_batch.filtered_batch(steps, torch.cat([row[None], peer_rows]), [params, *peer_params],
                                      [[]] * (1 + len(peer_params)))[0]
    return alone, batch


def route_name(route, params, vocab, pos=0) -> str:
    routes = route(params, vocab)
    return next(name for name in Routes._fields if pos in getattr(routes, name))


# ---- step 2: the window's tie order ----------------------------------------------------------------------
def tie_probe():
    """T2's row for canonical_window: 90 equal values (0.0) and 10 lower ones, V = 100: [1, 100]."""
    x = torch.zeros(1, 100)
    x[0, 90:] = -1.0
    return x


def tie_widths(x, widths=(4, 8, 16, 33, 64), head=None):
    """Two widths a < b where torch.topk puts the ids of the first `head` columns (default: a) in another order, or
    None."""
    orders = {w: torch.topk(x, w).indices[0].tolist() for w in widths}
    return next(((a, b) for a in widths for b in widths
                 if a < b and a >= (head or a) and orders[a][:head or a] != orders[b][:head or a]), None)


def inside_tie_probe(vocab=100, tries=64):
    """A row [1, V] whose top 8 values are 3 distinct ones and a run of 5 equal ones (3.0), inside every window of 8
    columns or more, and two widths a < b where torch.topk orders those 8 columns differently on this machine:
    (row, (a, b)), or (the last row tried, None) when this torch never does."""
    for seed in range(tries):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(1, vocab, generator=g).clamp(max=2.5)                         # [1, V] below 3
        x[0, torch.randperm(vocab, generator=g)[:8]] = torch.tensor([5.0, 4.5, 4.0, 3.0, 3.0, 3.0, 3.0, 3.0])
        if (widths := tie_widths(x, (8, 12, 16, 33, 64), head=8)) is not None:
            return x, widths
    return x, None


# ---- step 4: a kept set that runs past the window ---------------------------------------------------------------
def past_the_window():
    """Two rows whose kept set runs past their window: (label (zh, en), row [V], params, window width). A tie at the
    k-th value across the window's edge (top_k = 3, W = 4: two of the four tied values are outside), and a nucleus
    longer than WINDOW (top-p only, a flat row of V = 1000)."""
    tie = torch.randn(300, generator=torch.Generator().manual_seed(41)) * 0.3 - 4.0
    tie[[7, 90]] = torch.tensor([5.0, 4.0])
    tie[[17, 80, 150, 230]] = 3.0                                                     # the 3rd value, four times
    flat = torch.randn(1000, generator=torch.Generator().manual_seed(42)) * 0.3
    return [(("第 k 大的值跨过窗口边缘并列（V = 300）", "a tie at the k-th value across the window's edge (V = 300)"), tie,
             SamplingParams(top_k=3, seed=1), 4),
            (("nucleus 比窗口长（V = 1000，平坦）", "a nucleus longer than the window (V = 1000, flat)"), flat,
             SamplingParams(top_p=0.9, seed=2), fast_batch.WINDOW)]


def kept_in_window(row, params, width) -> int:
    """The naive answer: p08's rule applied to the row's `width` largest values only (ties in ascending id), with
    top-p's 100 % the whole row's mass, as if the window were all there is. How many tokens it keeps."""
    order = torch.sort(row.double(), descending=True, stable=True).indices[:width]   # [W] the window's ids
    z = row.double() / params.temperature
    before = 0.0
    total = float(torch.exp(z - z.max()).sum()) if not 0 < params.top_k < len(row) else None
    kth = float(z[order[params.top_k - 1]]) if 0 < params.top_k < len(row) else -INF
    kept = [j for j in range(width) if float(z[order[j]]) >= kth]
    if total is None:                                                                 # top-k on: its mass is 100 %
        total = float(torch.exp(z[order[kept]] - z.max()).sum())
    for n, j in enumerate(kept):
        if n > 0 and before >= params.top_p * total:
            return n
        before += float(torch.exp(z[order[j]] - z.max()))
    return len(kept)


def kept_by_reference(row, params) -> int:
    """How many tokens p08's rule keeps over the whole row (course.oracle)."""
    return len(oracle.kept(oracle.probs_for(row.tolist(), params)))


# ---- step 3: a total over the whole row ------------------------------------------------------------------
def long_rows(vocab=151936, n=6):
    """Weights in [0, 1] [n, V], one long row each, made the way T3 makes its rows (exp of randn * 3 over its max)."""
    w = torch.exp(torch.randn(n, vocab, generator=torch.Generator().manual_seed(45)) * 3.0)
    return w / w.amax(-1, keepdim=True)


@contextmanager
def threads(n):
    """torch uses n threads inside (torch.sum splits a lone long row across them), its old count after."""
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


# ---- step 4: the kept mass in a window ---------------------------------------------------------------------
def spread_rows():
    """T4's rows: 8 random rows [8, 300] (no ties), one top_k each (7 .. 40), as canonical windows of all 300."""
    x = torch.randn(8, 300, generator=torch.Generator().manual_seed(46)) * 2.0
    return torch.sort(x, dim=-1, descending=True, stable=True).values, [7, 12, 17, 23, 29, 33, 37, 40]


def naive_total(z, top_k):
    """The naive kept mass of a window z [n, W]: zero the columns after each row's top_k, then sum the window."""
    e = torch.exp(z - z[:, :1])                                                       # [n, W]
    e = e.masked_fill(torch.arange(z.shape[1]) >= top_k, 0.0)                         # top_k [n, 1]
    return e.sum(-1, keepdim=True)                                                    # [n, 1] over all W columns


def certain_in_window(steps, row, params, width) -> bool:
    """steps.filter_window on the row's canonical window of `width` columns (temperature applied, top-p's 100 % the
    whole row's mass where top-k is off): is the row certain there?"""
    z = torch.sort(row, descending=True, stable=True).values[None, :width] / params.temperature   # [1, W]
    top_k = torch.tensor([[params.top_k if 0 < params.top_k < len(row) else 0]])                 # [1, 1] 0: off
    top_p = torch.tensor([[params.top_p if params.top_p < 1 else INF]])                          # [1, 1] inf: off
    mass = None if top_k.item() else torch.exp(row[None] / params.temperature - z[:, :1]).sum(-1, keepdim=True)
    return bool(steps.filter_window(z, top_k, top_p, mass, False)[3][0])


def kept_by_steps(steps, row, params) -> int:
    """How many tokens the whole batch code (window, certain, exact route) keeps for the row alone."""
    return int((fast_batch.filtered_batch(steps, row[None], [params], [[]])[0] > 0).sum())


TIES_NOTE = ("top_k = 2 不 certain：与第 k 大的值相等的值延续到第 k 列，一个只有 k + 1 列的窗口（这一行单独时）看不到这串在哪结束；"
             "top_k = 4：第 k 列的值更低，每个宽度都看得到",
             "top_k = 2 is not certain: values tied with the k-th go on into column k, and a window of k + 1 columns "
             "(the row alone) cannot see where the run ends; top_k = 4: column k's value is lower, which every width "
             "can see")   # printed once the learner's filter_window runs: the why, after the answer is written


# ---- step 5: the uniforms ----------------------------------------------------------------------------------
def global_uniforms(req_ids, params):
    """The naive draw (the blog's bug 3): one global RNG, one number per row of the batch, in batch order."""
    return torch.rand(len(req_ids), dtype=torch.float64).tolist()


class StepsSampler:
    """A sampler made of the given batch code, these steps and one source of uniforms: a FastSampler's streams
    (its _uniforms and free), or, with streams=None, the naive global RNG (global_uniforms)."""

    def __init__(self, steps, streams=None):
        self.steps, self.streams = steps, streams

    def sample(self, logits, req_ids, params, prev_tokens):
        u = (self.streams._uniforms if self.streams is not None else global_uniforms)(req_ids, params)
        return fast_batch.sample_batch(self.steps, logits, params, prev_tokens, u)

    def free(self, req_id):
        if self.streams is not None:
            self.streams.free(req_id)


# ---- one picture per idea: how far the row moved, naive vs fixed ---------------------------------------------
def draw_moves(labels, naive, fixed, lang, unit, title):
    """Two bars per probe item: |batch - alone| for the naive version and for the step as written (0: it did not
    move); fixed=None: the naive version's bars alone (the step is not written yet). labels: item names, each a
    string or a (zh, en) pair; naive, fixed: numbers; unit, title: (zh, en) pairs. Returns the Figure."""
    labels = [fig_text(lang, *label) if isinstance(label, tuple) else label for label in labels]
    fig = new_figure(110 + 26 * len(labels))
    ax = fig.add_subplot()
    at = range(len(labels))
    ax.barh([i - 0.2 for i in at], naive, height=0.4, color=REMOVED_COLOR, label=fig_text(lang, "朴素写法", "naive"))
    if fixed is not None:
        ax.barh([i + 0.2 for i in at], fixed, height=0.4, color=KEPT_COLOR,
                label=fig_text(lang, "你写的这一步", "your step as written"))
    for i, value in enumerate(fixed or ()):
        if value == 0:
            ax.text(0, i + 0.2, " 0", va="center", fontsize=FONT_PT)
    ax.set_yticks(list(at), labels, fontsize=FONT_PT)
    ax.invert_yaxis()
    ax.set_xlabel(fig_text(lang, *unit), fontsize=FONT_PT)
    ax.set_title(fig_text(lang, *title), fontsize=FONT_PT + 1, pad=22)
    ax.legend(fontsize=FONT_PT, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False,
              borderaxespad=0.2)                                                # above the bars, never on them
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelsize=FONT_PT)
    fig._p08_state = {"labels": list(labels), "naive": list(naive), "fixed": None if fixed is None else list(fixed)}
    return fig


def ulps(a, b) -> list:
    """How many float32 steps apart a and b are, elementwise (0: the same bits): a list of ints."""
    a, b = torch.as_tensor(a, dtype=torch.float32).flatten(), torch.as_tensor(b, dtype=torch.float32).flatten()
    return (a.view(torch.int32).long() - b.view(torch.int32).long()).abs().tolist()
