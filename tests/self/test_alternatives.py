"""Correct samplers written by other hands (float64 + inverse CDF; engine style + exponential race) pass
every check: the grader does not insist on the reference's incidental choices."""
from pathlib import Path

import pytest

from tests.self.helpers import check_ids, run

ALTERNATIVES = sorted((Path(__file__).parent / "alternatives").glob("*.py"))
FAST_ALTERNATIVES = sorted((Path(__file__).parent / "alternatives_fast").glob("*.py"))


@pytest.mark.parametrize("impl", ALTERNATIVES, ids=lambda p: p.stem)
def test_an_independent_correct_sampler_passes_every_check(impl):
    results = run("p08", impl, check_ids("p08"))
    failed = {cid: r.lines for cid, r in results.items() if not r.passed}
    assert not failed and len(results) == len(check_ids("p08")), failed


@pytest.mark.parametrize("impl", FAST_ALTERNATIVES, ids=lambda p: p.stem)
def test_an_independent_correct_fast_path_passes_every_check(impl):
    results = run("p08-fast", impl, check_ids("p08-fast"))
    failed = {cid: r.lines for cid, r in results.items() if not r.passed}
    assert not failed and len(results) == len(check_ids("p08-fast")), failed
