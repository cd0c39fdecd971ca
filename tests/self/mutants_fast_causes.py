"""Fast-path bugs whose first explanation once named another cause, and the check that must now name the true one
(phrase) and no longer the old one (wrong=); format: tests/self/mutants.py."""
from tests.self.mutants import Mutant

CAUSES = [
    Mutant("row_total_overflows", "I6.large",
           (("    scale = 2.0 ** (62 - e.shape[-1].bit_length())", "    scale = 2.0 ** 53"),),
           "row_total's fixed-point scale is too large for a flat V = 50257 row: the int64 sum overflows",
           "the int64 sum overflows", wrong="a fixed-size window"),
    Mutant("row_total_overflows_in_t4", "T4.prefix_sum",
           (("    scale = 2.0 ** (62 - e.shape[-1].bit_length())", "    scale = 2.0 ** 53"),),
           "the same, seen by the step check on a flat row", "the int64 sum overflows"),
    Mutant("penalty_skipped_for_the_batch", "T5.filtered_probs",
           (("    if not pairs:\n", "    if not pairs or any(p.repetition_penalty == 1.0 for p in params):\n"),),
           "the penalty is skipped for the whole batch when one row has none",
           "not on whether its peers have one", wrong="penalise first, then take the argmax"),
    Mutant("probs_leave_out_the_exact_rows", "F1",
           (("                out.index_copy_(0, exact, self._exact(x, params, routes, knobs, exact, draw=False))",
             "                pass"),),
           "filtered_probs never fills the exact route's rows", "exact route"),
    Mutant("top_k_window_one_column_narrow", "F5",
           (('width = min(vocab, WINDOW if name == "top_p" else max(params[i].top_k for i in members) + 1)',
             'width = min(vocab, WINDOW if name == "top_p" else max(params[i].top_k for i in members))'),
          ("certain = kth > z.gather(1, top_k)", "certain = kth > z.gather(1, top_k.clamp(max=z.shape[1] - 1))")),
           "the top-k window has top_k columns, not top_k + 1 (and certain reads its last column instead of column k)",
           "a top-k row needs top_k + 1", wrong="how _parts picks"),
    Mutant("row_mass_over_the_window", "T5.filtered_probs",
           (("row_mass = row_total(torch.sub(z_all, z[:, :1]).exp_())", "row_mass = row_total(torch.exp(z - z[:, :1]))"),),
           "top-p's 100 % summed over the window, not over all V", "whole row"),
    Mutant("exact_route_drops_the_large_top_k_rows", "F7",
           (("exact = torch.cat([exact, unsure]) if routes.exact else unsure", "exact = unsure"),),
           "rows with top_k above WINDOW_K are dropped from the exact route when a window row is not certain: their "
           "tokens stay torch.empty's", "(req_id 'p', top_k=299, seed=101): token id"),
]
