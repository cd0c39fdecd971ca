"""A correct fast path in another style: a sorted top-k window with canonical ties, widened until it holds the
kept set (else a stable full sort), one float64 uniform per row and an inverse CDF. Written apart from solutions/."""
import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams  # noqa: F401

__all__ = ["SamplingParams", "FastSampler"]

FIRST_WINDOW = 64


def canonical(vals, idx):
    """Equal values in ascending token id (what a stable sort gives), independent of the window width."""
    by_id = torch.argsort(idx, dim=-1)
    vals, idx = vals.gather(1, by_id), idx.gather(1, by_id)
    vals, pos = torch.sort(vals, dim=-1, descending=True, stable=True)
    return vals, idx.gather(1, pos)


def at_col(t, col):
    return t.gather(1, col.unsqueeze(1)).squeeze(1)


def window(x, K):
    if K == x.shape[-1]:                                  # the whole row: a stable sort is already canonical
        return torch.sort(x, dim=-1, descending=True, stable=True)
    vals, idx = torch.topk(x, K, dim=-1)
    return canonical(vals, idx)


class FastSampler:
    def __init__(self):
        self._own = {}
        self._shared = {}

    def _gen(self, req_id, p, device):
        if p.seed is None:
            key = str(device)
            if key not in self._shared:
                self._shared[key] = torch.Generator(device=device).manual_seed(torch.initial_seed())
            return self._shared[key]
        if req_id not in self._own:
            self._own[req_id] = torch.Generator(device=device).manual_seed(p.seed)
        return self._own[req_id]

    def free(self, req_id):
        self._own.pop(req_id, None)

    # steps 1-3 -------------------------------------------------------------------------------
    def _prepare(self, logits, params, prev_tokens):
        dev = logits.device
        x = logits.float()
        B, V = x.shape
        pen = torch.tensor([p.repetition_penalty for p in params], dtype=torch.float32, device=dev)
        rows, toks = [], []
        for i, h in enumerate(prev_tokens):
            if params[i].repetition_penalty == 1.0:
                continue
            h = h.tolist() if isinstance(h, torch.Tensor) else list(h)
            rows += [i] * len(h)
            toks += [int(t) for t in h]
        if rows:
            r = torch.tensor(rows, dtype=torch.long, device=dev)
            t = torch.tensor(toks, dtype=torch.long, device=dev)
            v = x[r, t]
            x = x.clone()
            x[r, t] = torch.where(v > 0, v / pen[r], v * pen[r])
        temp = torch.tensor([p.temperature for p in params], dtype=torch.float32, device=dev)
        greedy = temp < GREEDY_TEMPERATURE
        greedy_tok = x.argmax(dim=-1)
        x = x / torch.where(greedy, torch.ones_like(temp), temp).unsqueeze(1)
        top_k = torch.tensor([p.top_k for p in params], dtype=torch.long, device=dev)
        top_p = torch.tensor([p.top_p for p in params], dtype=torch.float32, device=dev)
        return x, greedy, greedy_tok, top_k, top_p

    def _groups(self, greedy, top_k, top_p, V):
        k_on = (top_k > 0) & (top_k < V)
        p_on = (top_p > 0) & (top_p < 1)
        active = ~greedy
        plain = torch.nonzero(active & ~k_on & ~p_on).flatten()
        filt = torch.nonzero(active & (k_on | p_on)).flatten()
        return plain, filt

    # steps 4-5 on one group --------------------------------------------------------------------
    def _kept(self, xg, kg, pg):
        R, V = xg.shape
        k_on = (kg > 0) & (kg < V)
        p_on = (pg > 0) & (pg < 1)
        need = torch.where(k_on, kg + 1, torch.full_like(kg, FIRST_WINDOW))
        K = min(V, int(need.max()))
        only_p = p_on & ~k_on
        if bool(only_p.any()):
            mx = xg.max(dim=-1, keepdim=True).values
            z_all = torch.cumsum(torch.exp(xg - mx), dim=-1)[:, -1]
        else:
            z_all = torch.ones(R, dtype=xg.dtype, device=xg.device)
        while True:
            vals, idx = window(xg, K)
            w = torch.exp(vals - vals[:, :1])
            kcol = (torch.where(k_on, kg, torch.ones_like(kg)).clamp(max=K) - 1)
            kth = at_col(vals, kcol)
            in_k = ~k_on.unsqueeze(1) | (vals >= kth.unsqueeze(1))
            wk = torch.where(in_k, w, torch.zeros_like(w))
            c = torch.cumsum(wk, dim=-1)
            n_k = in_k.sum(dim=1)
            z = torch.where(k_on, at_col(c, n_k - 1), z_all)
            before = (c - wk) / z.unsqueeze(1)
            drop = p_on.unsqueeze(1) & (before >= pg.unsqueeze(1))
            keep = in_k & ~drop
            keep[:, 0] = True
            n = keep.sum(dim=1)
            last = vals[:, -1]
            sure = (~k_on | (kth > last)) & (at_col(vals, n - 1) > last)
            if K == V or bool(sure.all()):
                w = torch.where(keep, w, torch.zeros_like(w))
                c = torch.cumsum(w, dim=-1)
                total = at_col(c, n - 1)
                return idx, keep, w, c, total
            K = min(V, K * 4)
            if K > V // 8:
                K = V

    def _plain(self, xp):
        w = torch.exp(xp - xp.max(dim=-1, keepdim=True).values)
        keep = w > 0
        c = torch.cumsum(w, dim=-1)
        return None, keep, w, c, c[:, -1]

    # public --------------------------------------------------------------------------------------
    def filtered_probs(self, logits, params, prev_tokens):
        x, greedy, greedy_tok, top_k, top_p = self._prepare(logits, params, prev_tokens)
        out = torch.zeros_like(x).scatter(1, greedy_tok.unsqueeze(1), 1.0)
        plain, filt = self._groups(greedy, top_k, top_p, x.shape[-1])
        if plain.numel():
            out[plain] = torch.softmax(x[plain], dim=-1)
        if filt.numel():
            idx, keep, w, c, total = self._kept(x[filt], top_k[filt], top_p[filt])
            probs = w / total.unsqueeze(1)
            out[filt] = torch.zeros_like(x[filt]).scatter(1, idx, probs)
        return out

    def _uniforms(self, rows, req_ids, params, device):
        return torch.cat([torch.rand(1, generator=self._gen(req_ids[r], params[r], device), device=device,
                                     dtype=torch.float64) for r in rows])

    def _pick(self, keep, c, total, u):
        thr = (u * total.double()).unsqueeze(1)
        hit = keep & (c.double() > thr)
        cols = torch.arange(keep.shape[1], device=keep.device)
        first = torch.where(hit, cols, keep.shape[1]).amin(dim=1)
        last_kept = torch.where(keep, cols, -1).amax(dim=1)
        return torch.where(first < keep.shape[1], first, last_kept)

    def sample(self, logits, req_ids, params, prev_tokens):
        x, greedy, greedy_tok, top_k, top_p = self._prepare(logits, params, prev_tokens)
        tokens = greedy_tok.clone()
        plain, filt = self._groups(greedy, top_k, top_p, x.shape[-1])
        for rows, is_plain in ((plain, True), (filt, False)):
            if rows.numel() == 0:
                continue
            rl = rows.tolist()
            u = self._uniforms(rl, req_ids, params, logits.device)
            if is_plain:
                idx, keep, w, c, total = self._plain(x[rows])
            else:
                idx, keep, w, c, total = self._kept(x[rows], top_k[rows], top_p[rows])
            col = self._pick(keep, c, total, u)
            tokens[rows] = col if idx is None else idx.gather(1, col.unsqueeze(1)).squeeze(1)
        return tokens
