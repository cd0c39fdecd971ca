"""Known-buggy variants of the fast path (solutions/p08_sampler_fast.py), as text patches, and the check
each one must fail (see tests/self/mutants.py for the format)."""
from tests.self.mutants import Mutant

P08_FAST = [
    Mutant("blog_drops_crossing_token", "F3", (("n_top_p = 1 + _first_true(cs[:, :-1] >= top_p * mass)",
                                                "n_top_p = _first_true(cs > top_p * mass).clamp(min=1)"),),
           "blog bug 1: keeps only cumsum <= top_p", phrase='cumsum - p'),
    Mutant("blog_clamp_min_floor", "F2", (("e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)",
                                           "e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0).clamp_min(1e-9)"),),
           "blog bug 2: clamp_min(1e-9) after masking", phrase='no clamp_min'),
    Mutant("blog_global_rng", "F4", (("values = stream_uniforms(keys, counts)", "values = torch.rand(len(keys), dtype=torch.float64).tolist()"),),
           "blog bug 3: one global RNG", phrase='the draw depends on the peers'),
    Mutant("exact_route_draws_unfiltered", "F6", (("k[:, 2:3],", "k[:, 2:3] if not draw else torch.full_like(k[:, 2:3], INF),"),),
           "the exact route draws without top-p (tokens outside the kept set)", phrase=''),
    Mutant("never_certain", "F5", (("certain = kth > z.gather(1, top_k)", "certain = kth > INF"),),
           "no top-k row is ever certain: every row takes the exact route", phrase="should be certain",
           wrong="a per-row loop is left"),
    Mutant("exact_route_skips_the_smallest_temperature", "F1",
           (("unit_temp=all(p.temperature == 1 for p in params if p.temperature >= GREEDY_TEMPERATURE))",
             "unit_temp=all(p.temperature == 1 for p in params if p.temperature > GREEDY_TEMPERATURE))"),),
           "a row with temperature exactly 1e-5 is left out of the exact route's 'every temperature is 1' test", phrase=''),
    Mutant("uncertain_rows_kept_in_window", "F1", (("unsure.append(certain.argsort(stable=True)[:n_unsure] if n_unsure else None)", "unsure.append(None)"),),
           "window rows that are not certain keep their window's answer", phrase=''),
    Mutant("greedy_rows_unpenalized", "E1.greedy", (("tokens.index_copy_(0, greedy, x.index_select(0, greedy).argmax(-1))",
                                                     "tokens.index_copy_(0, greedy, logits.index_select(0, greedy).float().argmax(-1))"),),
           "greedy rows skip the penalty", phrase='penalty comes after the greedy test'),
    Mutant("fast_free_converts_the_id", "I5", (("        self._streams.pop(req_id, None)", "        self._streams.pop(str(req_id), None)"),),
           "free() pops str(req_id): an int req_id's stream is never reset", phrase="exactly as the caller gives it"),
    Mutant("fast_free_keeps_stream", "I5", (("        self._streams.pop(req_id, None)", "        pass"),), "free() keeps the stream", phrase='free must drop'),
    Mutant("full_vocab_sort_always", "F5", (("vals, ids = window_topk(xs, width)",
                                             "vals, ids = (t[:, :width] for t in torch.sort(xs, dim=-1, descending=True, stable=True))"),),
           "sorts the whole vocabulary for every top-k row (the 'before' of seed 004)", phrase='it sorts full rows (V=50257)',
           wrong="still a per-row Python loop, or"),
    Mutant("fast_path_one_row_at_a_time", "F5", (("        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n",
                                                  "        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n        if len(req_ids) > 1:\n"
                                                  "            return torch.cat([self.sample(logits[i:i + 1], req_ids[i:i + 1], params[i:i + 1], "
                                                  "prev_tokens[i:i + 1]) for i in range(len(req_ids))])\n"),),
           "runs the fast path once per row", phrase="a per-row loop is left", wrong="or a sort of the whole vocabulary"),
    Mutant("sample_draws_from_a_short_window", "F6", (("col = inverse_cdf(cs, total, u, e)", "col = inverse_cdf(cs[:, :8], cs[:, :8][:, -1:], u, e[:, :8])"),),
           "sample() draws from the first 8 columns of the window while filtered_probs() keeps them all",
           phrase="never reaches tokens your filtered_probs keeps"),
    Mutant("window_ties_in_topk_order", "F1", (("z, ids = canonical_window(vals / temp, ids)", "z = vals / temp"),),
           "leaves ties inside the window in torch.topk's order", phrase="reference keeps"),
    Mutant("probs_penalty_into_callers_logits", "F1",
           (("    x = x.clone() if x is logits else x", "    x = x"),), "the penalty is written into the caller's fp32 logits", phrase="changed the caller's logits in place"),
    Mutant("probs_penalty_on_every_rows_history", "F1",
           (("x[rows, ids] = torch.where(values > 0, values / pens.float(), values * pens.float())",
             "x[:, ids] = torch.where(x[:, ids] > 0, x[:, ids] / pens.float(), x[:, ids] * pens.float())"),),
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
