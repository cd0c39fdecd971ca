"""Comparison samplers for the p08 benchmark and the fast-path notebook.

Each has the Sampler API `sample(logits, req_ids, params, prev_tokens) -> LongTensor [B]`:

- `FullSortSampler`: the vectorized full-vocab-sort way serving engines ship today (the "before" of seed 004).
- `BlogSampler`: seed 004's sorted-top-k way, re-written here with its three bugs kept on purpose.
- `logits_floor(logits)`: one read of the logits, the cost every sampler pays at least.
- `reference_sampler()` / `fast_sampler()`: the solutions' Sampler and FastSampler, loaded by file path
  (solutions/ is not a package).
"""
from functools import lru_cache

import torch

from course import problems
from course.loader import load_module, load_solution  # noqa: F401  (load_module re-exported for the notebook)
from course.problems import ROOT  # noqa: F401  (re-exported)
from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams  # noqa: F401  (re-exported)

__all__ = ["FullSortSampler", "BlogSampler", "logits_floor", "load_module", "reference_sampler",
           "fast_sampler"]


@lru_cache(maxsize=None)
def _solution(problem: str):
    """The solution module of a problem, imported once."""
    return load_solution(problems.get(problem))


def reference_sampler():
    """A fresh solutions/p08_sampler.Sampler: the readable per-row loop."""
    return _solution("p08").Sampler()


def fast_sampler():
    """A fresh solutions/p08_sampler_fast.FastSampler: the vectorized fast path."""
    return _solution("p08-fast").FastSampler()


def logits_floor(logits):
    """One read of the logits (`logits.amax(-1)`): no sampler can be cheaper than looking at every logit once.
    Not `max(-1)`: it also finds the indices, which made it several times slower than a read on the course's CPU,
    and slower than the fast path at V = 151936 (docs/benchmark.md)."""
    return logits.amax(-1)


class FullSortSampler:
    """The full-vocab-sort way: sort [B, V], mask top-k by rank and top-p by mass_before, scatter back, draw."""

    def __init__(self):
        self._seeded = {}   # req_id -> torch.Generator
        self._shared = {}   # device -> torch.Generator for the unseeded rows

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: softmax of each row after temperature, top-k (by rank) and top-p, in vocab order."""
        x = _solution("p08-fast").penalized_fp32(logits, params, prev_tokens)   # [B, V] step 1, shared
        batch, vocab = x.shape
        dev = x.device
        temp = torch.tensor([[max(p.temperature, GREEDY_TEMPERATURE)] for p in params], device=dev)  # [B, 1]
        top_k = torch.tensor([[p.top_k if 0 < p.top_k < vocab else vocab] for p in params], device=dev)
        top_p = torch.tensor([[p.top_p if 0 < p.top_p < 1 else 2.0] for p in params], device=dev)   # 2 = off
        sorted_z, order = torch.sort(x / temp, dim=-1, descending=True)          # [B, V] the full sort
        rank = torch.arange(vocab, device=dev)                                   # [V]
        sorted_z = sorted_z.masked_fill(rank >= top_k, float("-inf"))            # top-k by rank
        probs = torch.softmax(sorted_z, dim=-1)                                  # [B, V]
        remove = (torch.cumsum(probs, dim=-1) - probs) >= top_p                  # top-p by mass_before
        remove[:, 0] = False
        sorted_z = sorted_z.masked_fill(remove, float("-inf"))
        filtered = torch.empty_like(sorted_z).scatter_(1, order, sorted_z)       # [B, V] back to vocab order
        probs = torch.softmax(filtered, dim=-1)                                  # [B, V]
        greedy = [i for i, p in enumerate(params) if p.temperature < GREEDY_TEMPERATURE]
        if greedy:
            onehot = torch.zeros(len(greedy), vocab, device=dev)
            probs[greedy] = onehot.scatter_(1, x[greedy].argmax(-1, keepdim=True), 1.0)
        return probs

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]; seeded rows one by one with their own generator."""
        probs = self.filtered_probs(logits, params, prev_tokens)                 # [B, V]
        dev = probs.device
        tokens = probs.argmax(-1)                                                # greedy rows keep this
        if dev not in self._shared:
            self._shared[dev] = torch.Generator(device=dev).manual_seed(torch.initial_seed())
        shared = [i for i, p in enumerate(params) if p.seed is None and p.temperature >= GREEDY_TEMPERATURE]
        if shared:
            tokens[shared] = torch.multinomial(probs[shared], 1, generator=self._shared[dev])[:, 0]
        for i, (req_id, p) in enumerate(zip(req_ids, params)):
            if p.seed is None or p.temperature < GREEDY_TEMPERATURE:
                continue
            if req_id not in self._seeded:
                self._seeded[req_id] = torch.Generator(device=dev).manual_seed(p.seed)
            tokens[i] = torch.multinomial(probs[i], 1, generator=self._seeded[req_id])[0]
        return tokens

    def free(self, req_id):
        """Forget req_id's generator."""
        self._seeded.pop(req_id, None)


class BlogSampler:
    """Seed 004's sorted-top-k way, bugs kept on purpose: cumsum > top_p, clamp_min(1e-9), one global RNG.

    Like the blog's `_sample_next_token_batch`, it takes ONE temperature/top_k/top_p for the whole batch:
    the first row's. It ignores seeds, generators and the repetition penalty.
    """

    FLOOR = 1e-9   # bug 2: after masking, every token in the window keeps at least this much

    def _window(self, logits, params):
        """(sorted_idx [B, K] or None, probs [B, K or V]) the blog draws from, clamp floor included."""
        p = params[0]                                                            # batch-wide: first row's
        scaled = logits.float() / max(p.temperature, GREEDY_TEMPERATURE)
        vocab = scaled.shape[-1]
        top_k, top_p = int(p.top_k), float(p.top_p)
        if top_p <= 0.0 or top_p >= 1.0:                                         # top-p off
            if top_k <= 0 or top_k >= vocab:
                return None, torch.softmax(scaled, dim=-1).clamp_min(self.FLOOR)
            sorted_logits, sorted_idx = torch.topk(scaled, top_k, dim=-1)
            return sorted_idx, torch.softmax(sorted_logits, dim=-1).clamp_min(self.FLOOR)
        k = vocab if top_k <= 0 else min(top_k, vocab)
        sorted_logits, sorted_idx = torch.topk(scaled, k, dim=-1)                # [B, K]
        probs = torch.softmax(sorted_logits, dim=-1)
        mask = torch.cumsum(probs, dim=-1) > top_p                               # bug 1: drops the crossing token
        mask[..., 0] = False
        return sorted_idx, probs.masked_fill(mask, 0.0).clamp_min(self.FLOOR)    # bug 2: removed tokens > 0

    def filtered_probs(self, logits, params, prev_tokens=None):
        """[B, V] float32: what torch.multinomial really draws from (renormalised, floor included)."""
        if params[0].temperature < GREEDY_TEMPERATURE:
            return torch.zeros_like(logits, dtype=torch.float32).scatter_(1, logits.argmax(-1, keepdim=True), 1.0)
        sorted_idx, probs = self._window(logits, params)
        probs = probs / probs.sum(-1, keepdim=True)
        if sorted_idx is None:
            return probs
        return torch.zeros(logits.shape, device=logits.device).scatter_(1, sorted_idx, probs)

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B], drawn with torch's global RNG (bug 3: not per request)."""
        if params[0].temperature < GREEDY_TEMPERATURE:
            return torch.argmax(logits, dim=-1)
        sorted_idx, probs = self._window(logits, params)
        choice = torch.multinomial(probs, 1)                                     # bug 3: the global generator
        if sorted_idx is None:
            return choice.squeeze(-1)
        return sorted_idx.gather(-1, choice).squeeze(-1)

    def free(self, req_id):
        """Nothing to forget: the blog keeps no per-request state."""
