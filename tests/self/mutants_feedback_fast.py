"""p08-fast bugs for the report's self-tests (tests/self/test_report_causes.py): one bug each, whose report must stay
short (one block per cause): a [B, 1] return, and the blog's bugs 1 and 3 (tests/self/mutants_fast.py). Format:
tests/self/mutants.py."""
from tests.self.mutants import Mutant
from tests.self.mutants_fast import P08_FAST

SINGLE_BUGS = [
    Mutant("fast_column_output", "S6", (("    return tokens.clone()", "    return tokens.clone()[:, None]"),),
           "FastSampler.sample returns [B, 1]: every whole-sampler check sees it", phrase="drop the last dim"),
    *(m for m in P08_FAST if m.name in ("blog_drops_crossing_token", "blog_global_rng")),
]
DEFAULT = {"fast_column_output"}        # the others: -m slow (a whole p08-fast grade each)
