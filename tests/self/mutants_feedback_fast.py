"""p08-fast bugs for the report's self-tests (tests/self/test_report_causes.py): one bug each, whose report must stay
short (one block per cause). Format: tests/self/mutants.py."""
from tests.self.mutants import Mutant

SINGLE_BUGS = [
    Mutant("fast_column_output", "S6", (("    return tokens.clone()", "    return tokens.clone()[:, None]"),),
           "FastSampler.sample returns [B, 1]: every whole-sampler check sees it", phrase="drop the last dim"),
    Mutant("fast_drops_crossing_token", "F3", (("n_top_p = 1 + first_true(cs[:, :-1] >= top_p * mass)",
                                                "n_top_p = first_true(cs > top_p * mass).clamp(min=1)"),),
           "blog bug 1 (cumsum > top_p): the step check and the whole-sampler checks see it", phrase="cumsum - p"),
    Mutant("fast_global_rng", "F4", (("values = stream_uniforms(keys, counts)",
                                      "values = torch.rand(len(keys), dtype=torch.float64).tolist()"),),
           "blog bug 3 (one global RNG): the streams' checks see it", phrase="must come from its own stream"),
]
DEFAULT = {"fast_column_output"}        # the others: -m slow (a whole p08-fast grade each)
