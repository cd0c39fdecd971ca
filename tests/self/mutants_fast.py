"""Known-buggy variants of the fast path (solutions/p08_sampler_fast.py), as text patches, and the check
each one must fail (see tests/self/mutants.py for the format)."""
from tests.self.mutants import Mutant

P08_FAST = [
    Mutant("blog_drops_crossing_token", "F3", (("n_top_p = 1 + _first_true(cs[:, :-1] >= top_p * mass)",
                                                "n_top_p = _first_true(cs > top_p * mass).clamp(min=1)"),
                                               ("(torch.arange(vocab, device=dev) <= cut_id))",
                                                "(torch.arange(vocab, device=dev) < cut_id))")),
           "blog bug 1: keeps only cumsum <= top_p (window and selection)", phrase='cumsum - p'),
    Mutant("blog_clamp_min_floor", "F2", (("e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)",
                                           "e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0).clamp_min(1e-9)"),
                                          ("return torch.where(keep, e, 0.0) / mass",
                                           "return torch.where(keep, e, 0.0).clamp_min(1e-9) / mass")),
           "blog bug 2: clamp_min(1e-9) after masking (window and selection)", phrase='no clamp_min'),
    Mutant("blog_global_rng", "F4", (("row.uniform_(generator=self._shared_generator(device) if p.seed is None else self._seeded[req_id])",
                                      "row.uniform_()"),),
           "blog bug 3: one global RNG", phrase='the draw depends on the peers'),
    Mutant("selection_draws_from_whole_row", "I6", (("return cross(torch.minimum((u * kept.double()).long() + 1, kept))[0]",
                                                     "return cross(torch.minimum((u * total.double()).long() + 1, total))[0]"),),
           "top-p by selection: draws at u * the whole row's mass, not u * the kept mass (tokens outside the kept set)", phrase=''),
    Mutant("greedy_rows_unpenalized", "E1.greedy", (("tokens[[at[i] for i in greedy]] = picks",
                                                     "tokens[[at[i] for i in greedy]] = torch.argmax(logits.float()[[at[i] for i in greedy]], dim=-1)"),),
           "greedy rows skip the penalty", phrase='penalty comes after the greedy test'),
    Mutant("fast_free_keeps_generator", "I5", (("        self._seeded.pop(req_id, None)", "        pass"),), "free() keeps the generator", phrase='free must drop'),
    Mutant("full_vocab_sort_always", "F5", (("vals, ids = window_topk(x, width, None if every else torch.tensor(rows, device=x.device), maxima)",
                                             "vals, ids = (torch.stack(t) for t in zip(*[torch.sort(r, descending=True, stable=True)"
                                             " for r in _take(x, rows)]))"),),
           "sorts the whole vocabulary for every top-k row (the 'before' of seed 004)", phrase='it sorts full rows (V=50257)',
           wrong="still a per-row Python loop, or"),
    Mutant("fast_path_one_row_at_a_time", "F5", (("            tokens = self._sample(logits, req_ids, params, prev_tokens)",
                                                  "            tokens = torch.cat([self._sample(logits[i:i + 1], req_ids[i:i + 1], "
                                                  "params[i:i + 1], prev_tokens[i:i + 1]) for i in range(len(req_ids))])"),),
           "runs the fast path once per row", phrase="a per-row loop is left", wrong="or a sort of the whole vocabulary"),
    Mutant("sample_draws_from_a_short_window", "F6", (("ids.gather(1, inverse_cdf(cs, total, u, e))[:, 0]",
                                                       "ids.gather(1, inverse_cdf(cs[:, :8], cs[:, :8][:, -1:], u, e[:, :8]))[:, 0]"),
                                                      ("inverse_cdf(cs, total, self._uniforms(req_ids, params, x.device), e)",
                                                       "inverse_cdf(cs[:, :8], cs[:, :8][:, -1:], self._uniforms(req_ids, params, x.device), "
                                                       "e[:, :8])")),
           "sample() draws from the first 8 columns of the window while filtered_probs() keeps them all",
           phrase="never reaches tokens your filtered_probs keeps"),
    Mutant("window_ties_in_topk_order", "F1", (("            z, ids = canonical_window(z, ids)                                    # ascending ids among equals\n",
                                                "            pass\n"),),
           "leaves ties inside the window in torch.topk's order", phrase="reference keeps"),
    Mutant("probs_penalty_into_callers_logits", "F1",
           (("        x = x.clone()                                                           # never the caller's tensor",
             "        pass"),), "the penalty is written into the caller's fp32 logits", phrase="changed the caller's logits in place"),
    Mutant("probs_penalty_on_every_rows_history", "F1",
           (("x[rows, ids] = torch.where(values > 0, values / pens, values * pens)",
             "x[:, ids] = torch.where(x[:, ids] > 0, x[:, ids] / pens, x[:, ids] * pens)"),),
           "every row is penalised at every row's history ids", phrase="This row alone is right, wrong in this batch"),
    Mutant("exact_top_p_boundary_kept", "F1", (("n_top_p = 1 + _first_true(cs[:, :-1] >= top_p * mass)",
                                                "n_top_p = 1 + _first_true(cs[:, :-1] > top_p * mass)"),),
           "the window keeps a token whose mass before is exactly top_p", phrase="mass before >= top_p, not >"),
    Mutant("argmax_for_top_k_one", "I3.edges",
           (("        return tokens.clone()                                                    # an ordinary tensor again",
             "        tokens = tokens.clone()\n"
             "        for i, p in enumerate(params):\n"
             "            if p.top_k == 1:\n"
             "                tokens[i] = logits[i].float().argmax()\n"
             "        return tokens"),),
           "top_k = 1 rows take the argmax: of two equal maxima only the first is ever drawn",
           phrase="draw among the kept tokens", wrong="no argmax shortcut"),
]
