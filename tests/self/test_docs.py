"""The README stays the learner's front door and tells the truth: the quick start that CI runs, the check
counts a finished exercise shows, the files it points to; course authors' material lives in docs/."""
import re

from course import problems
from course.grader.checks import checks_for
from course.problems import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
FLAT = " ".join(README.split())


def test_the_quick_start_holds_the_two_commands_ci_runs():
    block = re.search(r"## Quick start\s+```bash\n(.*?)```", README, re.S)
    assert block, "README.md has no ```bash block under '## Quick start'"
    commands = [line.split("#")[0].strip() for line in block[1].splitlines() if line.strip()]
    assert commands == ["./check.sh p08", "./check.sh test"], commands
    assert "./check.sh test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_done_states_each_problems_real_check_count():
    for name, problem in problems.problems().items():
        count = len(checks_for(problem))
        said = f"`{count}/{count} checks passed` for {name}"
        assert said in FLAT, f"README.md should say {said!r} (the number of checks of {name} is {count})"


def test_the_readme_is_short_and_names_only_files_that_exist():
    assert len(README.splitlines()) <= 130, "README.md is the learner's page: author material goes to docs/"
    for path in set(re.findall(r"`((?:mine|solutions|notebooks|hints|tests|docs|course)/[\w./-]*)`", README)):
        assert (ROOT / path.rstrip("/")).exists(), f"README.md names {path}, which does not exist"
    for doc in ("CONTRIBUTING.md", "docs/grader.md", "docs/benchmark.md"):
        assert doc in README and (ROOT / doc).is_file(), doc


def test_project_text_speaks_in_the_projects_voice():
    for path in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for pattern in (r"\bI (?:added|wrote|read|ran|measured|tried|did)\b", r"\b[Ii]ssue #?\d+\b", r"\bmy\b"):
            found = re.search(pattern, text)
            assert not found, f"{path.name}: {found[0]!r} (write in the project's voice, no issue numbers)"
