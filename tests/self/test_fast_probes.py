"""F7-F9 are sharp: a fast path whose route or sums its peers decide, or that breaks a contract detail, fails the check
aimed at it with the cause named (tests/self/mutants_fast_probes.py), and the bugs whose explanation once named another
cause now get the true one (tests/self/mutants_fast_causes.py). Fairness: tests/self/test_alternatives.py."""
from pathlib import Path

import pytest
import torch

from course.grader.worker import GRADE_SEED
from tests.self.helpers import check_ids, mutate, run
from tests.self.mutants_fast_causes import CAUSES
from tests.self.mutants_fast_probes import PROBES

IDS = ["F7", "F8", "F9"]
# bugs that show only where torch.sum rounds a lone long row and a batch apart (it does on the CPUs the course is
# developed on; a CPU whose kernels add both the same way cannot show them, and the test says so instead of failing)
SUMS_OVER_V = {"plain_probs_by_torch_sum", "row_mass_by_torch_sum", "plain_draw_total_by_torch_sum"}


def torch_sum_splits_a_lone_row() -> bool:
    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, 4))
    try:
        g = torch.Generator().manual_seed(0)
        rows = [torch.exp(torch.randn(1, 151936, generator=g) * 0.3) for _ in range(8)]
        return any(not torch.equal(e.sum(-1), e.expand(4, -1).contiguous().sum(-1)[:1]) for e in rows)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("mutant", PROBES + CAUSES, ids=[m.name for m in PROBES + CAUSES])
def test_probe_mutant_fails_the_check_aimed_at_it(mutant, tmp_path):
    """PROBES: F7-F9's own; CAUSES: bugs whose first explanation once named another cause (wrong=)."""
    if mutant.name in SUMS_OVER_V and not torch_sum_splits_a_lone_row():
        pytest.skip("torch.sum adds a lone row of V = 151936 and a batch the same way on this CPU")
    assert mutant.aimed_at in check_ids("p08-fast")
    result = run("p08-fast", mutate("p08-fast", mutant, tmp_path), [mutant.aimed_at])[mutant.aimed_at]
    assert result.status in ("fail", "error"), f"{mutant.name} ({mutant.bug}): {mutant.aimed_at} -> {result.status}"
    text = " ".join(result.lines)
    assert all(mutant.phrases()) and mutant.named_in(text), f"{mutant.name}: {text}"


def test_every_probe_check_has_a_mutant():
    assert set(IDS) <= {m.aimed_at for m in PROBES}


def test_the_grader_runs_with_a_torch_seed_other_than_zero():
    """A shared stream keyed by the constant 0 instead of torch.initial_seed() would pass by chance at seed 0."""
    assert GRADE_SEED != 0


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_probe_failure_reads_in_both_languages(lang, tmp_path):
    mutant = next(m for m in PROBES if m.name == "complete_when_the_window_is_the_row")
    result = run("p08-fast", mutate("p08-fast", mutant, tmp_path), [mutant.aimed_at], lang=lang)[mutant.aimed_at]
    text = " ".join(result.lines)
    assert result.status == "fail" and ("同伴改变了这一行的路线" in text) == (lang == "zh"), text


OWN_SHAPE = Path(__file__).parent / "alternatives_fast" / "fixed_window_float64.py"
OWN_SHAPE_BUGS = [  # (name, check, (old, new), phrase): a file without the stub's pieces, graded by F7/F8 alone
    ("mass_by_torch_sum", "F8",
     ("mass.index_copy_(0, sel, weights.cumsum(-1)[:, -1])", "mass.index_copy_(0, sel, weights.sum(-1))"),
     "nothing but the batch size changed"),
    ("penalty_only_when_every_row_has_one", "F7",
     ("    if pairs:\n", "    if pairs and all(p.repetition_penalty != 1.0 for p in params):\n"),
     "the row's penalty depends on whether its peers have one"),
]


@pytest.mark.parametrize("name,check_id,patch,phrase", OWN_SHAPE_BUGS, ids=[b[0] for b in OWN_SHAPE_BUGS])
def test_the_probes_grade_a_fast_path_in_its_own_shape(name, check_id, patch, phrase, tmp_path):
    """No route(), no exact_rows: the probes still compare the row with itself and say what moved, without a route."""
    if name == "mass_by_torch_sum" and not torch_sum_splits_a_lone_row():
        pytest.skip("torch.sum adds a lone row of V = 151936 and a batch the same way on this CPU")
    text = OWN_SHAPE.read_text(encoding="utf-8")
    assert text.count(patch[0]) == 1, name
    impl = tmp_path / f"{name}.py"
    impl.write_text(text.replace(*patch), encoding="utf-8")
    result = run("p08-fast", impl, [check_id])[check_id]
    text = " ".join(result.lines)
    assert result.status == "fail" and phrase in text and "route " not in text, text
