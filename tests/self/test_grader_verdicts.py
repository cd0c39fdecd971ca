"""The grader is right: the reference passes every check, the stub fails every one as 'not implemented',
and every known mutant fails the check aimed at it."""
import re

import pytest
import torch

from course import problems
from tests.self import mutants, mutants_fast, mutants_fast_given
from tests.self.helpers import check_ids, mutate, run

PROBLEMS = [name for name, p in problems.problems().items() if p.path("solution").exists()]
GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")


@GPU
@pytest.mark.parametrize("problem", PROBLEMS)
def test_reference_passes_every_check_on_a_gpu(problem):
    """On the CPU, test_cli.py grades the reference through check.sh."""
    results = run(problem, problems.get(problem).path("solution"), check_ids(problem), "cuda")
    failed = {cid: r.lines for cid, r in results.items() if not r.passed}
    assert len(results) == len(check_ids(problem)) and not failed, f"the reference fails: {failed}"


@pytest.mark.parametrize("problem", list(problems.problems()))
def test_stub_fails_every_check_as_not_implemented(problem):
    stub = problems.get(problem).path("stub")
    if not stub.exists():
        pytest.skip(f"{problem} has no stub yet")
    results = run(problem, stub, check_ids(problem))
    wrong = {cid: (r.status, r.lines) for cid, r in results.items() if r.status != "todo"}
    assert len(results) == len(check_ids(problem)) and not wrong, \
        f"stub checks not reported as not implemented: {wrong}"
    assert all("not implemented yet" in r.lines[0] for r in results.values())


FAST = mutants_fast.P08_FAST + mutants_fast_given.GIVEN
ALL_MUTANTS = [("p08", m) for m in mutants.P08] + [("p08-fast", m) for m in FAST]


@pytest.mark.parametrize("problem,mutant", ALL_MUTANTS, ids=[f"{p}-{m.name}" for p, m in ALL_MUTANTS])
def test_mutant_fails_the_check_aimed_at_it(problem, mutant, tmp_path):
    impl = mutate(problem, mutant, tmp_path)
    result = run(problem, impl, [mutant.aimed_at])[mutant.aimed_at]
    assert result.status in ("fail", "error"), \
        f"mutant {mutant.name} ({mutant.bug}): check {mutant.aimed_at} returned {result.status}, expected a failure"
    assert result.lines and all(line.strip() for line in result.lines)
    text = " ".join(result.lines)
    assert mutant.named_in(text), \
        f"mutant {mutant.name} ({mutant.bug}): {mutant.aimed_at} failed, but its report does not say " \
        f"{mutant.phrase!r}: {text}"


def test_there_are_enough_mutants_and_each_targets_a_real_check():
    assert len(mutants.P08) >= 15
    for problem, mutant in ALL_MUTANTS:
        assert mutant.aimed_at in check_ids(problem), mutant.name


def test_a_comment_edit_in_a_solution_breaks_no_mutant():
    """Patches match code, not comments: every comment of the solution rewritten, each mutant makes the same file."""
    from tests.self.helpers import apply_patches, with_given_code, without_comments
    from tests.self.mutants_fast_causes import CAUSES
    from tests.self.mutants_fast_probes import PROBES
    from tests.self.mutants_fast_steps import FAST_STEPS

    for problem, group in (("p08", mutants.P08), ("p08-fast", FAST + FAST_STEPS + PROBES + CAUSES)):
        text = problems.get(problem).path("solution").read_text(encoding="utf-8")
        edited = re.sub(r"  # .*$", "  # a comment rewritten by an author", text, flags=re.M)
        assert edited != text and without_comments(edited) == without_comments(text)
        for mutant in group:
            mutated = apply_patches(with_given_code(text, mutant.patches), mutant.patches, mutant.name)
            assert apply_patches(with_given_code(edited, mutant.patches), mutant.patches, mutant.name) == mutated, \
                mutant.name
