"""Known-buggy variants of the fast path (solutions/p08_sampler_fast.py), as text patches, and the check
each one must fail (see tests/self/mutants.py for the format)."""
import re

from tests.self.mutants import Mutant

STEPS_LINE = "    return Steps(route, window_topk, canonical_window, row_total, filter_window, inverse_cdf)"


def own_shape(patches, *functions):
    """The patches, on a file whose step functions (of the given names) go by other names: its step checks note that
    they do not grade it, so the whole-sampler checks must explain the bug themselves (a fast path of its own shape)."""
    renamed = STEPS_LINE
    for name in functions:
        renamed = re.sub(rf"\b{name}\b", f"own_{name}", renamed)
    tail = "".join(f"\n\n\nown_{name} = {name}\ndel {name}" for name in functions)
    return (*patches, (STEPS_LINE, renamed + tail))


OWN_UNIFORMS = (("    def _uniforms(self, req_ids, params):", "    def _own_uniforms(self, req_ids, params):"),
                ("return sample_batch(_steps(), logits, params, prev_tokens, self._uniforms(req_ids, params))",
                 "return sample_batch(_steps(), logits, params, prev_tokens, self._own_uniforms(req_ids, params))"))
CROSSING = (("n_top_p = 1 + first_true(cs[:, :-1] >= top_p * mass)", "n_top_p = first_true(cs > top_p * mass).clamp(min=1)"),)
FLOOR = (("e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)",
          "e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0).clamp_min(1e-9)"),)
NEVER_CERTAIN = (("certain = kth > z.gather(1, top_k)", "certain = kth > INF"),)
FREE_KEEPS = (("        self._streams.pop(req_id, None)", "        pass"),)
BOUNDARY_KEPT = (("n_top_p = 1 + first_true(cs[:, :-1] >= top_p * mass)", "n_top_p = 1 + first_true(cs[:, :-1] > top_p * mass)"),)

# A bug in a step function fails its step check (T1-T5) first, and every later check names that step as the cause
# ("fix T4.filter_window first"); the same bug in a file of its own shape is explained by the later check itself.
P08_FAST = [
    Mutant("blog_drops_crossing_token_own_shape", "F3", own_shape(CROSSING, "filter_window"),
           "blog bug 1 in a file of its own shape", phrase="cumsum - p"),
    Mutant("blog_clamp_min_floor_own_shape", "F2", own_shape(FLOOR, "filter_window"),
           "blog bug 2 in a file of its own shape", phrase="no clamp_min"),
    Mutant("never_certain_own_shape", "F5", own_shape(NEVER_CERTAIN, "filter_window"),
           "no row is ever certain, in a file of its own shape", phrase="should be certain", wrong="a per-row loop is left"),
    Mutant("fast_free_keeps_stream_own_shape", "I5", (*FREE_KEEPS, *OWN_UNIFORMS),
           "free() keeps the stream, in a file of its own shape", phrase="free must drop"),
    Mutant("exact_top_p_boundary_kept_own_shape", "F1", own_shape(BOUNDARY_KEPT, "filter_window"),
           "the window keeps a token whose mass before is exactly top_p, in a file of its own shape",
           phrase="mass before >= top_p, not >"),
    Mutant("blog_drops_crossing_token", "F3", CROSSING,
           "blog bug 1: keeps only cumsum <= top_p", phrase="fix T4.filter_window first"),
    Mutant("blog_clamp_min_floor", "F2", FLOOR,
           "blog bug 2: clamp_min(1e-9) after masking", phrase="fix T4.filter_window first"),
    Mutant("blog_global_rng", "F4", (("values = stream_uniforms(keys, counts)", "values = torch.rand(len(keys), dtype=torch.float64).tolist()"),),
           "blog bug 3: one global RNG", phrase="must come from its own stream",
           wrong="does not draw from what filtered_probs reports"),
    Mutant("draw_by_global_multinomial", "F4",
           (("col = steps.inverse_cdf(cs, total, u_rows, e)", "col = torch.multinomial(e, 1)"),),
           "a window part draws with torch.multinomial on the global RNG, not with its rows' uniforms",
           phrase="follows torch's global random state", wrong="the randomness a seeded row consumes per step depends on K or B"),
    Mutant("draw_reads_the_first_rows_u", "F4",
           (("u_rows = knobs[:, 3:] if len(rows) == len(params) else knobs.index_select(0, rows)[:, 3:]", "u_rows = knobs[:len(rows), 3:]"),),
           "a window part draws with the first rows' uniforms, not its own rows'", phrase="it reads another row's u",
           wrong="the randomness a seeded row consumes per step depends on K or B"),
    Mutant("exact_route_draws_unfiltered", "F6", (("k[:, 2:3],", "k[:, 2:3] if not draw else torch.full_like(k[:, 2:3], INF),"),),
           "the exact route draws without top-p (tokens outside the kept set)", phrase=''),
    Mutant("never_certain", "F5", NEVER_CERTAIN,
           "no top-k row is ever certain: every row takes the exact route", phrase="fix T4.certain first",
           wrong="a per-row loop is left"),
    Mutant("exact_route_skips_the_smallest_temperature", "F1",
           (("unit_temp=all(p.temperature == 1 for p in params if p.temperature >= GREEDY_TEMPERATURE))",
             "unit_temp=all(p.temperature == 1 for p in params if p.temperature > GREEDY_TEMPERATURE))"),),
           "a row with temperature exactly 1e-5 is left out of the exact route's 'every temperature is 1' test", phrase=''),
    Mutant("uncertain_rows_kept_in_window", "F1", (("unsure.append(certain.argsort(stable=True)[:n_unsure] if n_unsure else None)", "unsure.append(None)"),),
           "window rows that are not certain keep their window's answer", phrase=''),
    Mutant("greedy_rows_unpenalized", "E1.greedy", (("tokens.index_copy_(0, greedy, x.index_select(0, greedy).argmax(-1))",
                                                     "tokens.index_copy_(0, greedy, logits.index_select(0, greedy).float().argmax(-1))"),),
           "greedy rows skip the penalty", phrase="argmax of the unpenalised logits",
           wrong="the penalty comes after the greedy test"),
    Mutant("greedy_by_topk_one", "I3.edges", (("tokens.index_copy_(0, greedy, x.index_select(0, greedy).argmax(-1))",
                                               "tokens.index_copy_(0, greedy, x.index_select(0, greedy).topk(1).indices[:, 0])"),),
           "greedy rows take torch.topk(x, 1): of three tied maxima it returns the second", phrase="torch.argmax, which returns the first"),
    Mutant("fast_free_converts_the_id", "I5", (("        self._streams.pop(req_id, None)", "        self._streams.pop(str(req_id), None)"),),
           "free() pops str(req_id): an int req_id's stream is never reset", phrase="exactly as the caller gives it"),
    Mutant("fast_free_keeps_stream", "I5", FREE_KEEPS, "free() keeps the stream", phrase="fix T5.streams first"),
    Mutant("full_vocab_sort_always", "F5", (("vals, ids = steps.window_topk(xs, width)",
                                             "vals, ids = (t[:, :width] for t in torch.sort(xs, dim=-1, descending=True, stable=True))"),),
           "sorts the whole vocabulary for every top-k row (the 'before' of seed 004)", phrase='it sorts full rows (V=50257)',
           wrong="still a per-row Python loop, or"),
    Mutant("fast_path_one_row_at_a_time", "F5", (("        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n",
                                                  "        validate_sample_inputs(logits, req_ids, params, prev_tokens)\n        if len(req_ids) > 1:\n"
                                                  "            return torch.cat([self.sample(logits[i:i + 1], req_ids[i:i + 1], params[i:i + 1], "
                                                  "prev_tokens[i:i + 1]) for i in range(len(req_ids))])\n"),),
           "runs the fast path once per row", phrase="a per-row loop is left", wrong="or a sort of the whole vocabulary"),
    Mutant("sample_draws_from_a_short_window", "F6", (("col = steps.inverse_cdf(cs, total, u_rows, e)", "col = steps.inverse_cdf(cs[:, :8], cs[:, :8][:, -1:], u_rows, e[:, :8])"),),
           "sample() draws from the first 8 columns of the window while filtered_probs() keeps them all",
           phrase="never reaches tokens your filtered_probs keeps"),
    Mutant("window_ties_in_topk_order", "F1", (("z, ids = steps.canonical_window(vals / temp, ids)", "z = vals / temp"),),
           "leaves ties inside the window in torch.topk's order", phrase="other tokens among equal values"),
    Mutant("probs_penalty_into_callers_logits", "F1",
           (("    x = x.clone() if x is logits else x", "    x = x"),), "the penalty is written into the caller's fp32 logits", phrase="changed the caller's logits in place"),
    Mutant("probs_penalty_on_every_rows_history", "F1",
           (("x[rows, ids] = torch.where(values > 0, values / pens.float(), values * pens.float())",
             "x[:, ids] = torch.where(x[:, ids] > 0, x[:, ids] / pens.float(), x[:, ids] * pens.float())"),),
           "every row is penalised at every row's history ids", phrase="This row alone is right, wrong in this batch"),
    Mutant("exact_top_p_boundary_kept", "F1", BOUNDARY_KEPT,
           "the window keeps a token whose mass before is exactly top_p", phrase="fix T4.filter_window first"),
    Mutant("argmax_for_top_k_one", "I3.edges",
           (("    return tokens.clone()                                                    # an ordinary tensor again",
             "        tokens = tokens.clone()\n"
             "        for i, p in enumerate(params):\n"
             "            if p.top_k == 1:\n"
             "                tokens[i] = logits[i].float().argmax()\n"
             "    return tokens"),),
           "top_k = 1 rows take the argmax: of two equal maxima only the first is ever drawn",
           phrase="draw among the kept tokens", wrong="no argmax shortcut"),
    Mutant("filtered_probs_draws_from_the_streams", "F9",
           (("        return filtered_batch(_steps(), logits, params, prev_tokens)",
             "        self._uniforms(list(range(logits.shape[0])), params)\n"
             "        return filtered_batch(_steps(), logits, params, prev_tokens)"),),
           "filtered_probs() takes a uniform per row from the streams, so the next sample() draws other numbers",
           phrase="filtered_probs() moved the streams"),
    Mutant("filtered_probs_advances_seeded_streams", "F9",
           (("    def filtered_probs(self, logits, params, prev_tokens):\n",
             "    def filtered_probs(self, logits, params, prev_tokens, req_ids=None):\n"),
            ("        return filtered_batch(_steps(), logits, params, prev_tokens)",
             "        self._uniforms(req_ids or [f'r{i}' for i in range(logits.shape[0])], params)\n"
             "        return filtered_batch(_steps(), logits, params, prev_tokens)")),
           "filtered_probs() counts a draw of every row's stream (seeded rows too)", phrase="filtered_probs() moved the streams"),
    Mutant("low_precision_kept_without_penalties", "F9",
           (("    x = logits if logits.dtype == torch.float32 else logits.float()", "    x = logits"),
            ("    x = x.clone() if x is logits else x", "    x = x.float() if x.dtype != torch.float32 else x.clone()")),
           "the logits are made fp32 only on the penalty's branch: a bf16/fp16 batch without penalties stays low precision",
           phrase="even when no row has a penalty"),
]
