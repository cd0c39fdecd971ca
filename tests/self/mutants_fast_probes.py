"""Known-buggy fast paths that break batch invariance where the design makes it hard (a route or a reduction decided
with the peers' help, a float sum over a long row) or a contract detail, and the check each must fail with the cause
it names (format: tests/self/mutants.py). Each patch edits solutions/p08_sampler_fast.py."""
from tests.self.mutants import Mutant
from tests.self.mutants_fast import own_shape

PEER_ROUTE = "this peer moved the row to another route"

PROBES = [
    # a row's route decided with help from its peers (F7)
    Mutant("complete_when_the_window_is_the_row", "F7",
           (('complete = name == "top_p" and width == vocab', "complete = width == vocab"),),
           "a top-k row counts as certain when a peer's top_k = V - 1 makes the shared window the whole row",
           PEER_ROUTE),
    Mutant("route_exact_for_all_above_window_k", "F7",
           (("(routes.top_k if p.top_k <= WINDOW_K else routes.exact).append(i)",
             "(routes.top_k if max(q.top_k if 0 < q.top_k < vocab else 0 for q in params) <= WINDOW_K "
             "else routes.exact).append(i)"),),
           "every top-k row takes the exact route when one row's top_k is above WINDOW_K: T1 sees the route move with "
           "the batch, and F7 names T1", "fix T1.route first"),
    Mutant("one_unsure_row_sends_all_exact", "F7",
           (("unsure.append(certain.argsort(stable=True)[:n_unsure] if n_unsure else None)",
             "unsure.append(torch.arange(len(rows), device=rows.device) if n_unsure else None)"),),
           "every window row takes the exact route when one is not certain", PEER_ROUTE),
    Mutant("certain_judged_at_the_peers_width", "F7",
           own_shape((("certain = kth > z.gather(1, top_k)", "certain = kth > z[:, -1:]"),), "filter_window"),
           "a top-k row is judged against the last column of a window whose width the peers set (a file of its own "
           "shape)", PEER_ROUTE),
    Mutant("whole_row_window_for_a_lone_row", "F7",
           (('width = min(vocab, WINDOW if name == "top_p" else', 'width = min(vocab, (vocab if len(x) == 1 else WINDOW) if name == "top_p" else'),),
           "a lone top-p-only row gets a window of the whole row (complete), in a batch one of WINDOW",
           "the batch size decides its route", wrong="this peer moved the row"),
    Mutant("top_p_window_as_wide_as_the_peers", "F7",
           (('width = min(vocab, WINDOW if name == "top_p" else max(params[i].top_k for i in members) + 1)',
             "width = min(vocab, max([WINDOW] + [p.top_k + 1 for p in params if 0 < p.top_k <= WINDOW_K]))"),),
           "the top-p-only window widens to the peers' widest top_k + 1", PEER_ROUTE),
    Mutant("penalty_skipped_when_a_peer_has_none", "F7",
           (("    if not rows:\n", "    if not rows or any(p.repetition_penalty == 1.0 for p in params):\n"),),
           "the penalty is skipped for the whole batch when one row has none", "not on whether its peers have one"),
    # a float reduction over a long row outside row_total (F8)
    Mutant("plain_probs_by_torch_sum", "F8",
           (("probs = e / total if ids is None else", "probs = e / e.sum(-1, keepdim=True) if ids is None else"),),
           "filtered_probs divides a plain row by torch.sum over V", "nothing but the batch size changed"),
    Mutant("row_mass_by_torch_sum", "F8",
           (("row_mass = steps.row_total(weighed[0])",
             "row_mass = weighed[0].sum(-1, keepdim=True)"),),
           "top-p's 100 % summed with torch.sum over V, outside row_total", "nothing but the batch size changed"),
    Mutant("plain_draw_total_by_torch_sum", "F8",
           (("col = steps.inverse_cdf(cs, total, u_rows, e)", "col = steps.inverse_cdf(cs, e.sum(-1, keepdim=True) if ids is None else total, u_rows, e)"),),
           "sample() draws a plain row against torch.sum over V (filtered_probs stays right)", "nothing but the batch size changed"),
    # contract details (F9)
    Mutant("shared_stream_keyed_by_zero", "F9",
           (("self._shared = self._shared or [torch.initial_seed(), 0]", "self._shared = self._shared or [0, 0]"),),
           "the unseeded stream is keyed by the constant 0, not torch.initial_seed()", "keyed by torch.initial_seed()"),
    Mutant("shared_stream_keyed_by_zero_in_t5", "T5.streams",
           (("self._shared = self._shared or [torch.initial_seed(), 0]", "self._shared = self._shared or [0, 0]"),),
           "the same, seen by the step check (the grader's torch seed is not 0)", "the stream keyed by 0"),
    Mutant("uniform_made_float32", "F9",
           own_shape((("first = first_true((cs > u * total) & has_mass)",
                       "first = first_true((cs > u.float() * total) & has_mass)"),), "inverse_cdf"),
           "the draw casts the uniform to float32 (a file of its own shape; in the stub's shape T5.inverse_cdf names it)",
           "full 53 bits"),
    Mutant("stream_uniforms_kept_as_float32", "T5.streams",
           (("values = stream_uniforms(keys, counts)", "values = [float(torch.tensor(v, dtype=torch.float32)) for v in "
             "stream_uniforms(keys, counts)]"),),
           "_uniforms keeps each number as a float32", "the right number rounded to float32"),
    Mutant("uniforms_made_float32_in_sample", "F9",
           (("u_rows = knobs[:, 3:] if len(rows) == len(params) else knobs.index_select(0, rows)[:, 3:]",
             "u_rows = (knobs[:, 3:] if len(rows) == len(params) else knobs.index_select(0, rows)[:, 3:]).float()"),),
           "sample() hands the window rows float32 uniforms", "full 53 bits"),
    Mutant("sample_returns_an_inference_tensor", "F9",
           (("    return tokens.clone()", "    return tokens"),),
           "sample() returns the tensor it made inside torch.inference_mode()", "must return an ordinary tensor"),
    Mutant("probs_returns_an_inference_tensor", "F9",
           (("    return out.clone()", "    return out"),),
           "filtered_probs() returns the tensor it made inside torch.inference_mode()", "must return an ordinary tensor"),
]
