"""p08-fast bugs for the report's self-tests (tests/self/test_report_causes.py): one bug each, whose report must stay
short (one block per cause): a [B, 1] return, the blog's bugs 1 and 3 (tests/self/mutants_fast.py), and the step bugs
whose reports once ran past 30 lines (tests/self/mutants_fast_steps.py): a stream stored per seed, a row total scaled
by the number of rows, a draw against the window's last prefix sum, a top-k route without the V bound, a chunked
window found at a stride of whole chunks. Format: tests/self/mutants.py."""
from tests.self.mutants import Mutant
from tests.self.mutants_fast import P08_FAST
from tests.self.mutants_fast_steps import FAST_STEPS

STEP_BUGS = ("stream_per_seed", "row_total_scale_by_rows", "inverse_cdf_against_the_window_end",
             "route_top_k_on_when_positive", "window_flat_stride")
SINGLE_BUGS = [
    Mutant("fast_column_output", "S6", (("    return tokens.clone()", "    return tokens.clone()[:, None]"),),
           "FastSampler.sample returns [B, 1]: every whole-sampler check sees it", phrase="drop the last dim"),
    *(m for m in P08_FAST if m.name in ("blog_drops_crossing_token", "blog_global_rng")),
    *(m for m in FAST_STEPS if m.name in STEP_BUGS),
]
DEFAULT = {"fast_column_output", "stream_per_seed"}        # the others: -m slow (a whole p08-fast grade each)
