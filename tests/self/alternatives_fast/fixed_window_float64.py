"""A correct fast path in another shape: every filtered row reads a window of one fixed width (512 columns, whatever
its peers ask for), sums in float64 with a sequential cumsum, and a row the window cannot settle (a tie run or a
nucleus reaching its last column, a top_k above 511) is sorted whole; a vocabulary up to 4096 sorts every row. Its
routes differ from the reference's (no top_k + 1 window, no WINDOW of 64, no integer exact route), each decided by
the row alone. Written apart from solutions/."""
import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs  # noqa: F401
from course.streams import stream_uniform

__all__ = ["SamplingParams", "FastSampler"]

WIDTH = 512          # every window row's window, the same for any batch
SORT_V = 4096        # up to this vocabulary every row is sorted whole


def _penalised(logits, params, prev_tokens):
    """fp32 with each row's penalty at its distinct history ids (a copy when any row has one)."""
    x = logits.float()                                                           # [B, V]
    pairs = [(i, t, p.repetition_penalty) for i, (p, prev) in enumerate(zip(params, prev_tokens))
             if p.repetition_penalty != 1.0
             for t in sorted({int(v) for v in (prev.tolist() if isinstance(prev, torch.Tensor) else prev)})]
    if pairs:
        x = x.clone()
        rows = torch.tensor([r for r, _, _ in pairs], device=x.device)
        ids = torch.tensor([t for _, t, _ in pairs], device=x.device)
        pen = torch.tensor([q for _, _, q in pairs], device=x.device, dtype=torch.float32)
        v = x[rows, ids]
        x[rows, ids] = torch.where(v > 0, v / pen, v * pen)
    return x


def _ordered(z, width):
    """The first `width` values of each row, descending, equal values by ascending id: (values, ids) [n, W]."""
    if width >= z.shape[1]:
        return torch.sort(z, dim=-1, descending=True, stable=True)
    vals, ids = torch.topk(z, width, dim=-1)
    ids, by_id = ids.sort(dim=-1)
    vals, pos = vals.gather(1, by_id).sort(dim=-1, descending=True, stable=True)
    return vals, ids.gather(1, pos)


def _first(mask):
    """Column of the first True per row, the width where none: [n]."""
    cols = torch.arange(mask.shape[1], device=mask.device)
    return torch.where(mask, cols, mask.shape[1]).amin(-1)


def _filter(z, top_k, top_p, mass, whole):
    """Top-k then top-p on ordered windows z [n, W] -> (e float64 [n, W] zero outside, total [n], settled [n]).
    mass: float64 [n] (the whole row's weight, for rows with top-k off); whole: the windows are whole rows."""
    width = z.shape[1]
    e = torch.exp((z - z[:, :1]).double())                                       # [n, W]
    cs = e.cumsum(-1)                                                            # sequential per row
    kth = z.gather(1, (top_k - 1).clamp(max=width - 1)[:, None])                 # [n, 1]
    n_k = torch.where(top_k < 2 ** 62, (z >= kth).sum(-1), width)                # [n]
    row_mass = torch.where(top_k < 2 ** 62, cs.gather(1, (n_k - 1)[:, None])[:, 0], mass)
    before = cs - e
    n_p = 1 + _first(before[:, 1:] >= (top_p * row_mass)[:, None])              # [n]
    n = torch.minimum(n_k, n_p)
    e = e.masked_fill(torch.arange(width, device=z.device) >= n[:, None], 0.0)
    total = cs.gather(1, (n - 1)[:, None])[:, 0]
    if whole:
        return e, cs, total, torch.ones_like(n, dtype=torch.bool)
    fits = (top_k < width) | (top_k >= 2 ** 62)                                  # top-k off, or its k-th inside
    settled = (n < width) & (z.gather(1, (n - 1)[:, None])[:, 0] > z[:, -1]) & fits
    return e, cs, total, settled


class FastSampler:
    def __init__(self):
        self._seeded = {}        # req_id -> [seed, draws]
        self._shared = None      # [torch.initial_seed(), draws]: the unseeded requests' stream

    def free(self, req_id):
        self._seeded.pop(req_id, None)

    def _uniform(self, req_id, p):
        if p.seed is None:
            self._shared = self._shared or [torch.initial_seed(), 0]
            stream = self._shared
        else:
            stream = self._seeded.setdefault(req_id, [p.seed, 0])
        u = stream_uniform(*stream)
        stream[1] += 1
        return u

    def _rows(self, x, params):
        """Every non-greedy row's (rows [m], e [m, W], cs [m, W], total [m], ids [m, W])."""
        vocab, dev = x.shape[1], x.device
        rows = [i for i, p in enumerate(params) if p.temperature >= GREEDY_TEMPERATURE]
        if not rows:
            return None
        at = torch.tensor(rows, device=dev)
        temp = torch.tensor([params[i].temperature for i in rows], device=dev)[:, None]
        top_k = torch.tensor([params[i].top_k if 0 < params[i].top_k < vocab else 2 ** 62 for i in rows], device=dev)
        top_p = torch.tensor([params[i].top_p if params[i].top_p < 1 else float("inf") for i in rows],
                             dtype=torch.float64, device=dev)
        z = (x if len(rows) == len(params) else x.index_select(0, at)) / temp    # [m, V] (no copy: every row)
        open_rows = [j for j, i in enumerate(rows) if not 0 < params[i].top_k < vocab and params[i].top_p < 1]
        mass = torch.zeros(len(rows), dtype=torch.float64, device=dev)
        if open_rows:                                                            # top-p's 100 %: the whole row
            sel = torch.tensor(open_rows, device=dev)
            zs = z.index_select(0, sel)
            weights = torch.exp((zs - zs.amax(-1, keepdim=True)).double())
            mass.index_copy_(0, sel, weights.cumsum(-1)[:, -1])                  # sequential: the row's own sum
        whole = vocab <= SORT_V
        vals, ids = _ordered(z, vocab if whole else WIDTH)
        e, cs, total, settled = _filter(vals, top_k, top_p, mass, whole)
        if not whole and not bool(settled.all()):                                # sort those rows whole instead
            redo = (~settled).nonzero()[:, 0]
            vals2, ids2 = _ordered(z.index_select(0, redo), vocab)
            e2, cs2, total2, _ = _filter(vals2, top_k[redo], top_p[redo], mass[redo], True)
            used = max(WIDTH, int((e2 > 0).sum(-1).max()))                       # past it every weight is 0
            pad = lambda t: torch.cat([t, t.new_zeros(t.shape[0], used - t.shape[1])], 1)  # noqa: E731
            e, cs, ids = (pad(t) for t in (e, cs, ids))
            e[redo], cs[redo], ids[redo], total[redo] = e2[:, :used], cs2[:, :used], ids2[:, :used], total2
        return at, e, cs, total, ids

    def sample(self, logits, req_ids, params, prev_tokens):
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        with torch.no_grad():
            x = _penalised(logits, params, prev_tokens)
            tokens = x.argmax(-1)                                                # greedy rows: torch's first max
            u = [self._uniform(r, p) for r, p in zip(req_ids, params) if p.temperature >= GREEDY_TEMPERATURE]
            parts = self._rows(x, params)
            if parts is not None:
                at, e, cs, total, ids = parts
                threshold = torch.tensor(u, dtype=torch.float64, device=x.device) * total      # [m]
                hit = _first((cs > threshold[:, None]) & (e > 0))
                last = torch.where(e > 0, torch.arange(e.shape[1], device=x.device), -1).amax(-1)
                col = torch.minimum(hit, last)
                tokens[at] = ids.gather(1, col[:, None])[:, 0]
        return tokens

    def filtered_probs(self, logits, params, prev_tokens):
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        with torch.no_grad():
            x = _penalised(logits, params, prev_tokens)
            out = torch.zeros_like(x)
            out[torch.arange(len(x), device=x.device), x.argmax(-1)] = 1.0
            parts = self._rows(x, params)
            if parts is not None:
                at, e, cs, total, ids = parts
                probs = torch.zeros(len(at), x.shape[1], dtype=torch.float64, device=x.device)
                probs.scatter_add_(1, ids, e / total[:, None])                   # padded columns add 0
                out[at] = probs.float()
        return out
