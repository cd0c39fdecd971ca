"""Helpers of the self-tests: apply a mutant, run checks in process."""
from pathlib import Path

from course import problems
from course.grader.checks import checks_for
from course.grader.runner import grade_in_process


def mutate(problem_name: str, mutant, folder: Path) -> Path:
    """Write the solution with the mutant's patches applied; each patch must match exactly once."""
    problem = problems.get(problem_name)
    text = problem.path("solution").read_text(encoding="utf-8")
    for old, new in mutant.patches:
        count = text.count(old)
        assert count == 1, f"mutant {mutant.name}: patch target found {count} times (the solution changed?): {old[:80]!r}"
        text = text.replace(old, new)
    path = folder / f"{mutant.name}.py"
    path.write_text(text, encoding="utf-8")
    return path


def check_ids(problem_name: str) -> list:
    return [c.id for c in checks_for(problems.get(problem_name))]


def run(problem_name: str, impl, ids, device="cpu", lang="en") -> dict:
    return grade_in_process(problems.get(problem_name), impl, ids, device, lang)
