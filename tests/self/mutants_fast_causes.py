"""Fast-path bugs whose first explanation once named another cause, and the check that must now name the true one
(phrase) and no longer the old one (wrong=); format: tests/self/mutants.py."""
from tests.self.mutants import Mutant

CAUSES = [
    Mutant("row_total_overflows", "I6.large",
           (("    scale = 2.0 ** (62 - e.shape[-1].bit_length())", "    scale = 2.0 ** 53"),),
           "row_total's fixed-point scale is too large for a flat V = 50257 row: the int64 sum overflows",
           "the int64 sum overflows", wrong="a fixed-size window"),
    Mutant("row_total_overflows_in_t4", "T3.row_total",
           (("    scale = 2.0 ** (62 - e.shape[-1].bit_length())", "    scale = 2.0 ** 53"),),
           "the same, seen by the step check on a flat row", "the int64 sum overflows"),
    Mutant("prefix_method_chosen_by_width", "T4.filter_window",
           (('return e.cumsum(-1) if e.device.type == "cpu" else prefix_sum(e)',
             'return e.cumsum(-1) if e.device.type == "cpu" and e.shape[-1] <= WINDOW else prefix_sum(e)'),),
           "the prefix sums switch to the log-step scan for windows wider than WINDOW (the peers set the width)",
           "the prefix sums themselves changed with W", wrong="no sum over the window"),
    Mutant("probs_leave_out_the_exact_rows", "F1",
           (("            out.index_copy_(0, rows_exact, exact(x, params, routes, knobs, rows_exact, False, weights))",
             "            pass"),),
           "filtered_probs never fills the exact route's rows", "exact route"),
    Mutant("top_k_window_one_column_narrow", "F5",
           (('width = min(vocab, WINDOW if name == "top_p" else max(params[i].top_k for i in members) + 1)',
             'width = min(vocab, WINDOW if name == "top_p" else max(params[i].top_k for i in members))'),
          ("certain = kth > z.gather(1, top_k)", "certain = kth > z.gather(1, top_k.clamp(max=z.shape[1] - 1))")),
           "the top-k window has top_k columns, not top_k + 1 (and certain reads its last column instead of column k)",
           "a top-k row needs top_k + 1", wrong="how _parts picks"),
    Mutant("row_total_scale_by_xor", "T3.row_total",
           (("    scale = 2.0 ** (62 - e.shape[-1].bit_length())", "    scale = 2.0 ** (62 ^ e.shape[-1].bit_length())"),),
           "row_total's scale 2**(62 ^ b): 4x too large at an odd bit length (a mutation-testing survivor)",
           "the int64 sum overflows"),
    Mutant("top_p_against_the_whole_window", "T4.filter_window",
           (("    mass = cs.gather(1, n_top_k - 1)", "    mass = cs[:, -1:]"),),
           "a row with top-k on measures top-p against the whole window's mass, not its top-k set's",
           "takes the whole window's mass"),
    Mutant("row_mass_over_the_window_in_f1", "F1",
           (("row_mass = steps.row_total(weighed[0])", "row_mass = steps.row_total(torch.exp(z - z[:, :1]))"),),
           "the same, seen in a random batch", "the mass of the whole row"),
    Mutant("exact_route_drops_the_large_top_k_rows", "F7",
           (("        listed = [exact] * bool(routes.exact) + more", "        listed = more"),),
           "rows with top_k above WINDOW_K are dropped from the exact route when a window row is not certain: their "
           "tokens stay torch.empty's",                      # whatever memory torch.empty hands back: a peer whose
           ("is outside [0, 300) your route() puts it on exact", "moved")),  # garbage is in range shows as moved
    Mutant("top_p_row_certain_at_its_window", "F1",
           (('complete = name == "top_p" and width == vocab', 'complete = name == "top_p" and width >= WINDOW'),),
           "every top-p-only row counts as complete: a nucleus wider than the window stops at its 64 columns",
           "never reached exact_rows"),
]
