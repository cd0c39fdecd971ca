"""An independent re-derivation of P08's rule in plain Python float64 (no torch): the grader's oracle.

Used by the acceptance checks, the self-tests, the notebooks and the widgets, so that "what a correct
sampler draws from" is written once.
"""
from __future__ import annotations

import heapq
import math

from course.sampling_params import GREEDY_TEMPERATURE

NEG_INF = float("-inf")


def softmax(values) -> list:
    finite = [x for x in values if x != NEG_INF]
    top = max(finite)
    exps = [math.exp(x - top) if x != NEG_INF else 0.0 for x in values]
    total = sum(exps)
    return [e / total for e in exps]


def penalize(values, prev_tokens, penalty) -> list:
    """Step 1: each distinct id in prev_tokens once; v > 0 -> v / penalty, else v * penalty."""
    out = [float(x) for x in values]
    for t in set(int(t) for t in prev_tokens):
        out[t] = out[t] / penalty if out[t] > 0 else out[t] * penalty
    return out


def top_k_filter(values, top_k) -> list:
    """Step 4: keep values >= the k-th largest when 0 < top_k < V."""
    if not 0 < top_k < len(values):
        return list(values)
    kth = largest(values, top_k)[top_k - 1]
    return [x if x >= kth else NEG_INF for x in values]


def largest(values, n) -> list:
    """The n largest values, descending (a heap for a few, a sort for many: the same list)."""
    return heapq.nlargest(n, values) if n <= 4096 else sorted(values, reverse=True)[:n]


def descending_order(values) -> list:
    """Ids by descending value, equal values by ascending id (a stable sort keeps ties in id order)."""
    return sorted(range(len(values)), key=values.__getitem__, reverse=True)


def top_p_filter(values, top_p) -> list:
    """Step 5: keep the smallest descending prefix whose mass reaches top_p (the crossing token stays)."""
    if not 0 < top_p < 1:
        return list(values)
    probs = softmax(values)
    out, before = list(values), 0.0
    for rank, i in enumerate(descending_order(values)):
        if rank > 0 and before >= top_p:
            out[i] = NEG_INF
        before += probs[i]
    return out


def cut_is_clear(values, top_k, top_p, margin=1e-4) -> bool:
    """True when two correct fp32 samplers must agree on the kept set of these (tempered) values: no tie
    straddles the top-k or top-p cut, and no 'mass before' lies within `margin` of top_p."""
    if 0 < top_k < len(values):
        ranked = largest(values, top_k + 1)
        if ranked[top_k - 1] == ranked[top_k] != NEG_INF:
            return False
    values = top_k_filter(values, top_k)
    if not 0 < top_p < 1:
        return True
    probs = softmax(values)
    order = descending_order(values)
    before = 0.0
    for rank, i in enumerate(order):
        if rank > 0 and abs(before - top_p) < margin:          # rank 0 stays whatever top_p is
            return False
        if rank > 0 and before >= top_p:                       # first removed token: tied with the last kept?
            return values[i] != values[order[rank - 1]]
        before += probs[i]
    return True


def ambiguous_tokens(row, params, prev_tokens=(), margin=1e-4) -> set:
    """Tokens whose kept-or-removed status two correct fp32 samplers may decide differently: a 'mass before'
    within `margin` of top_p, or a tie in value straddling the top-p cut. Empty for greedy rows."""
    values = penalize(row, prev_tokens, params.repetition_penalty)
    if params.temperature < GREEDY_TEMPERATURE or not 0 < params.top_p < 1:
        return set()
    values = top_k_filter([x / params.temperature for x in values], params.top_k)
    probs, order = softmax(values), descending_order(values)
    out, before, cut = set(), 0.0, None
    for rank, i in enumerate(order):
        if rank > 0 and abs(before - params.top_p) < margin:
            out.add(i)
        if rank > 0 and cut is None and before >= params.top_p:
            cut = rank
        before += probs[i]
    if cut is not None and values[order[cut]] == values[order[cut - 1]]:
        out |= {i for i in order if values[i] == values[order[cut]]}
    return out


def filtered_probs(row, temperature=1.0, top_k=-1, top_p=1.0, repetition_penalty=1.0, prev_tokens=()) -> list:
    """The distribution a correct sampler draws this row's token from (greedy rows: one-hot at argmax)."""
    values = penalize(row, prev_tokens, repetition_penalty)
    if temperature < GREEDY_TEMPERATURE:
        best = max(range(len(values)), key=lambda i: (values[i], -i))   # first maximum, like torch.argmax
        return [1.0 if i == best else 0.0 for i in range(len(values))]
    values = [x / temperature for x in values]
    values = top_k_filter(values, top_k)
    values = top_p_filter(values, top_p)
    return softmax(values)


def probs_for(row, params, prev_tokens=()) -> list:
    """filtered_probs with the fields of a SamplingParams-like object."""
    return filtered_probs(row, params.temperature, params.top_k, params.top_p, params.repetition_penalty,
                          prev_tokens)


def kept(probs) -> set:
    return {i for i, p in enumerate(probs) if p > 0}


def sigma_violations(counts, probs, draws: int, sigmas: float = 6.0) -> list:
    """Tokens whose observed frequency is off by more than `sigmas` standard deviations, or that were
    drawn although their probability is zero: [(token, observed, expected, allowed)]."""
    out = []
    for token, p in enumerate(probs):
        observed = counts[token] / draws
        if p == 0.0:
            if counts[token]:
                out.append((token, observed, 0.0, 0.0))
            continue
        allowed = sigmas * math.sqrt(p * (1 - p) / draws) + 1.0 / draws
        if abs(observed - p) > allowed:
            out.append((token, observed, p, allowed))
    return out


def reference_probs(ref, row, params, prev_tokens=(), dtype=None):
    """The distribution the reference module `ref` (solutions/p08_sampler.py) draws row [V] from, computed
    in fp32 like the reference (or in `dtype`, e.g. torch.float64 for a more exact answer)."""
    import torch

    values = row.to(dtype or torch.float32)                                                           # [V]
    values = ref.apply_repetition_penalty(values, list(prev_tokens), params.repetition_penalty)       # [V]
    if params.temperature < GREEDY_TEMPERATURE:
        return torch.nn.functional.one_hot(values.argmax(), values.shape[-1]).to(values.dtype)        # [V]
    values = ref.apply_top_p(ref.apply_top_k(values / params.temperature, params.top_k), params.top_p)
    return torch.softmax(values, dim=-1)                                                               # [V]
