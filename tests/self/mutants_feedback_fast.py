"""p08-fast bugs for the report's self-tests (tests/self/test_report_causes.py): one bug each, whose report must stay
short. The fast path's solution is being restructured: a patch that no longer applies makes its test skip, saying
so, and is re-targeted then. Format: tests/self/mutants.py."""
from tests.self.mutants import Mutant

SINGLE_BUGS = [
    Mutant("fast_column_output", "S6", (("        return tokens.clone()", "        return tokens.clone()[:, None]"),),
           "FastSampler.sample returns [B, 1]", phrase="drop the last dim"),
]
