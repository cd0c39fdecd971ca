"""Helpers of the self-tests: apply a mutant, run checks in process, run check.sh."""
import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

from course import problems
from course.grader.checks import checks_for
from course.grader.runner import grade_in_process
from course.problems import ROOT


def without_comments(text: str) -> str:
    """text with every comment cut off its line (the line kept, so line numbers stay): a patch matches the code,
    whatever the solution's comments say. A fragment that does not tokenize loses its '  # ...' tails instead."""
    lines = text.split("\n")
    try:
        cuts = [t.start for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return "\n".join(re.sub(r"(^\s*|\s{2,})#.*$", "", line) for line in lines)
    for row, col in cuts:
        lines[row - 1] = lines[row - 1][:col].rstrip()
    return "\n".join(lines)


def apply_patches(text: str, patches, name: str) -> str:
    """The solution's code (comments dropped) with each (old, new) applied; each old must match exactly once."""
    text = without_comments(text)
    for old, new in patches:
        old = without_comments(old)
        count = text.count(old)
        assert count == 1, (f"mutant {name}: patch target found {count} times (the solution's code changed?): "
                            f"{old[:80]!r}")
        text = text.replace(old, new)
    return text


def _course_imports(text: str) -> list:
    """The `from course.X import ...` statements at the top level of a module's text."""
    return [node for node in ast.parse(text).body
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course.")]


def _source_of(module: str) -> str:
    return (ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")


def _reaches(module: str, old: str) -> bool:
    """Is `old` code of this course module or of a course module it imports (at any depth)?"""
    source = _source_of(module)
    return old in without_comments(source) or any(_reaches(node.module, old) for node in _course_imports(source))


def with_given_code(text: str, patches) -> str:
    """The solution's text, with each given module of the course (`from course.X import ...`) whose code a patch
    targets written in place of its import, and so on into what that module imports (course/fast_batch.py
    imports course/selection.py): a mutant of the given plumbing is graded as a file that carries it itself."""
    inlined = True
    while inlined:
        inlined, code = False, without_comments(text)
        for node in _course_imports(text):
            if any(without_comments(old) not in code and _reaches(node.module, without_comments(old))
                   for old, _ in patches):
                lines = text.split("\n")
                text = "\n".join(lines[:node.lineno - 1] + [_source_of(node.module)] + lines[node.end_lineno:])
                inlined = True
                break
    return text


def mutate(problem_name: str, mutant, folder: Path) -> Path:
    """Write the solution with the mutant's patches applied (they match the code, not its comments; a patch of
    given code inlines that module first)."""
    problem = problems.get(problem_name)
    text = with_given_code(problem.path("solution").read_text(encoding="utf-8"), mutant.patches)
    text = apply_patches(text, mutant.patches, mutant.name)
    path = folder / f"{mutant.name}.py"
    path.write_text(text, encoding="utf-8")
    return path


def check_ids(problem_name: str) -> list:
    return [c.id for c in checks_for(problems.get(problem_name))]


def run(problem_name: str, impl, ids, device="cpu", lang="en") -> dict:
    return grade_in_process(problems.get(problem_name), impl, ids, device, lang)


def check_sh(*args, state=None, timeout=300, **extra_env):
    """Run check.sh's command line (python -m course.cli) in a child: (exit code, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", **extra_env)
    if state:
        env["COURSE_STATE"] = str(state)
    proc = subprocess.run([sys.executable, "-m", "course.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr
