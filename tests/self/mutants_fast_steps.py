"""Known-buggy variants of the fast path's step functions (solutions/p08_sampler_fast.py), as text patches,
and the step check T1-T6 each must fail (format: tests/self/mutants.py). The patches touch only the
exported step functions, whose text is stable, not the sampler's internals."""
from tests.self.mutants import Mutant

IDENTITY_CANONICAL = (("    if not bool((z[:, 1:] == z[:, :-1]).any()):\n        return z, ids",
                       "    if True:\n        return z, ids"),)

FAST_STEPS = [
    # step 1
    Mutant("penalty_divides_negatives", "T1.penalized_fp32",
           (("x[rows, ids] = torch.where(values > 0, values / pens, values * pens)", "x[rows, ids] = values / pens"),),
           "divides negative logits too", "a negative logit was divided"),
    Mutant("penalty_in_callers_tensor", "T1.penalized_fp32",
           (("        x = x.clone()                                                           # never the caller's tensor",
             "        pass"),),
           "writes the penalty into the caller's logits", "the caller's tensor must stay"),
    Mutant("penalty_keeps_bf16", "T1.penalized_fp32",
           (("    x[rows, ids] = torch.where(values > 0, values / pens, values * pens)\n    return x\n",
             "    x[rows, ids] = torch.where(values > 0, values / pens, values * pens)\n    return x.to(logits.dtype)\n"),),
           "keeps bf16 input in bf16", "expected float32"),
    Mutant("penalty_on_every_row", "T1.penalized_fp32",
           (("x[rows, ids] = torch.where(values > 0, values / pens, values * pens)",
             "x[:, ids] = torch.where(x[:, ids] > 0, x[:, ids] / pens, x[:, ids] * pens)"),),
           "penalises every row at every row's history ids (a [V] mask)", "outside this row's history"),
    # step 3: the window
    Mutant("window_forgets_the_tail", "T3.window_topk",
           (("cand = torch.cat([cand, x[rows, chunks * CHUNK:]], 1)", "cand = cand"),),
           "chunk trick without the logits that do not fill a chunk", "do not fill a chunk"),
    Mutant("window_chunk_sums", "T3.window_topk",
           (("maxima = body.amax(-1) if maxima is None else maxima", "maxima = body.sum(-1) if maxima is None else maxima"),),
           "ranks chunks by their sum instead of their max", "torch.topk's"),
    Mutant("window_ids_off_by_chunk", "T3.window_topk",
           (("ids = best.gather(1, (pos // CHUNK).clamp(max=width - 1)) * CHUNK + pos % CHUNK",
             "ids = best.gather(1, (pos // CHUNK).clamp(max=width - 1)) + pos % CHUNK"),),
           "forgets to scale the chunk index to a vocab id", "point at its column's value"),
    Mutant("canonical_left_to_topk", "T3.canonical_window", IDENTITY_CANONICAL,
           "keeps torch.topk's order among ties", "ascending token id"),
    Mutant("canonical_ties_descending_id", "T3.canonical_window",
           (("ids, by_id = ids.sort(dim=-1)", "ids, by_id = ids.sort(dim=-1, descending=True)"),),
           "ties in descending token id", "ascending token id"),
    Mutant("canonical_values_lose_ids", "T3.canonical_window",
           (("return z, ids.gather(-1, by_value)", "return z, ids"),),
           "sorts the values but not their ids", "a value moves with its id"),
    # step 4: sums
    # (e @ triu(ones) is not a mutant here: whether a BLAS matmul is exact across widths and batches depends on the
    # CPU's BLAS path, e.g. MKL with MKL_CBWR=COMPATIBLE passes every probe; the self-tests do not depend on it)
    Mutant("prefix_switches_on_batch_size", "T4.prefix_sum",
           (("    buffers, cs, shift = (torch.empty_like(e), torch.empty_like(e)), e, 1",
             "    if e.shape[0] >= 4:\n"
             "        return torch.cumsum(e, -1)\n"
             "    buffers, cs, shift = (torch.empty_like(e), torch.empty_like(e)), e, 1"),),
           "torch.cumsum for big batches, the log-step scan for small ones", "must not depend on the other rows of the batch"),
    Mutant("prefix_blocked_by_width", "T4.prefix_sum",
           (("    buffers, cs, shift = (torch.empty_like(e), torch.empty_like(e)), e, 1",
             "    block = max(1, e.shape[-1] // 4)\n"
             "    parts = [torch.cumsum(e[:, i:i + block], -1) for i in range(0, e.shape[-1], block)]\n"
             "    for i in range(1, len(parts)):\n"
             "        parts[i] = parts[i] + parts[i - 1][:, -1:]\n"
             "    return torch.cat(parts, -1)\n"
             "    buffers, cs, shift = (torch.empty_like(e), torch.empty_like(e)), e, 1"),),
           "a blocked scan whose blocks depend on W", "the same float for any width"),
    Mutant("prefix_misses_last_round", "T4.prefix_sum",
           (("    while shift < e.shape[-1]:", "    while 2 * shift < e.shape[-1]:"),),
           "stops the log-step scan one round early", "inclusive prefix sums"),
    Mutant("row_total_by_torch_sum", "T4.prefix_sum",
           (("    while e.shape[-1] > 1:\n        half = e.shape[-1] // 2",
             "    return e.sum(-1, keepdim=True)\n    while e.shape[-1] > 1:\n        half = e.shape[-1] // 2"),),
           "row_total = torch.sum, split across threads for a lone row", "splits a lone row"),
    # steps 4-5: filter_window
    Mutant("window_total_by_sum", "T4.filter_window",
           (("total = cs.gather(1, n_kept - 1)                                             # [n, 1] at the row's own end",
             "total = e.sum(-1, keepdim=True)"),),
           "total as a sum over the window, whose width the peers set", "no sum over the window"),
    Mutant("window_blog_crossing_token", "T4.filter_window",
           (("n_top_p = 1 + _first_true(cs[:, :-1] >= top_p * mass)", "n_top_p = _first_true(cs > top_p * mass).clamp(min=1)"),),
           "blog bug 1 inside the window", "the mass before reaches top_p"),
    Mutant("window_top_p_over_window_mass", "T4.filter_window",
           (("mass = torch.where(top_k > 0, mass, row_mass)", "mass = torch.where(top_k > 0, mass, cs[:, -1:])"),),
           "top-p-only rows normalised over the window, not over V", "expected 3 kept columns"),
    Mutant("window_trusts_tie_at_the_edge", "T4.filter_window",
           (("certain = (z.gather(1, n_kept - 1) > last) & (kth != last)", "certain = z.gather(1, n_kept - 1) >= last"),),
           "trusts a window whose last value ties with the cut", "may go on outside"),
    Mutant("window_clamp_min_floor", "T4.filter_window",
           (("e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)",
             "e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0).clamp_min(1e-9)"),),
           "blog bug 2 inside the window", "exactly 0 after"),
    Mutant("certain_by_count", "T4.filter_window",
           (("certain = (z.gather(1, n_kept - 1) > last) & (kth != last)", "certain = (n_kept < z.shape[1]) & (kth != last)"),),
           "trusts a kept set that ends inside the window although its last value ties the window's last", "certain only when"),
    # step 5: filtered_probs
    Mutant("probs_over_the_window_mass", "T5.filtered_probs",
           (("scatter_(1, ids, e / total)", "scatter_(1, ids, e / cs[:, -1:])"),),
           "filtered_probs divides the kept weights by the whole window's mass", "not 1: divide the kept weights by the kept mass"),
    Mutant("probs_greedy_before_penalty", "T5.filtered_probs",
           (("out[[at[i] for i in greedy], picks] = 1.0", "out[[at[i] for i in greedy], logits[[at[i] for i in greedy]].argmax(-1)] = 1.0"),),
           "filtered_probs puts a greedy row's one-hot at the argmax before the penalty", "argmax before the penalty"),
    Mutant("filtered_probs_not_normalised", "T5.filtered_probs",
           (("scatter_(1, ids, e / total)", "scatter_(1, ids, e)"),),
           "window rows report the kept weights exp(z - max), not divided by the kept mass", "expected"),
    # step 6: the draw
    Mutant("inverse_cdf_at_or_above", "T6.inverse_cdf",
           (("first = _first_true((cs > u * total) & has_mass)", "first = _first_true((cs >= u * total) & has_mass)"),),
           "cs >= threshold picks the column whose prefix only reaches it", "strictly"),
    Mutant("inverse_cdf_unscaled_u", "T6.inverse_cdf",
           (("first = _first_true((cs > u * total) & has_mass)", "first = _first_true((cs > u) & has_mass)"),),
           "compares prefixes with u, not u * total", "threshold = u * total"),
    Mutant("inverse_cdf_no_fallback", "T6.inverse_cdf",
           (("    return torch.minimum(first, last)", "    return first"),),
           "no fallback when rounding leaves no hit", "the last column with mass"),
]
