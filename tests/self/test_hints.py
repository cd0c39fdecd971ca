"""Hints: every problem has three levels in both languages, they grow, carry the seed's numbers, and
every hint a check can point to exists."""
import re

import pytest

from course import hints, problems
from course.grader.checks import checks_for
from course.problems import ROOT
from tests.self.helpers import check_sh

PROBLEMS = list(problems.problems())


@pytest.mark.parametrize("problem", PROBLEMS)
def test_three_distinct_levels_growing_in_detail_in_both_languages(problem):
    for lang in ("zh", "en"):
        texts = [hints.read(problem, level, lang) for level in hints.LEVELS]
        assert len(set(texts)) == 3
        assert len(texts[0]) < len(texts[2]) and len(texts[1]) < len(texts[2]), f"{problem} {lang}: L3 must say most"
        for level in hints.LEVELS:
            assert hints.anchors(problem, level, "zh") == hints.anchors(problem, level, "en"), (problem, level)


@pytest.mark.parametrize("lang,answer", [("en", "1.0, not 0.25"), ("zh", "1.0，不是 0.25")])
def test_the_seed_numbers_appear_where_promised(lang, answer):
    l1, l3 = hints.read("p08", 1, lang), hints.read("p08", 3, lang)
    packed = l1.replace(" ", "")
    for number in ("[3.0, -1.5, 0.5, -0.3]", "0.667, 0.333, 0, 0", "0.725, 0.181, 0.065, 0.029",
                   "0.370, 0.262, 0.203, 0.166"):
        assert number.replace(" ", "") in packed, number
    assert answer in l3 and answer not in l1
    assert "____" in l3 and "0.556" in l3 and "0.833" in l3


def hint_refs_in_checks():
    """(graded problem, a (problem, level, anchor) one of its checks or their failures can point to), for every problem:
    each check's own hint, and every pointer written in the files of its check modules and its context."""
    import importlib
    from pathlib import Path

    refs = set()
    for problem in problems.problems().values():
        refs |= {(problem.name, tuple(c.hint)) for c in checks_for(problem)}
        modules = [*problem.check_modules, problem.context.partition(":")[0], "course.grader.checks"]
        folders = {Path(importlib.import_module(m).__file__).parent for m in modules}
        for path in [p for folder in folders for p in folder.glob("*.py")] + [ROOT / "course" / "grader" / "checks.py"]:
            for prob, level, anchor in re.findall(r'\("([\w-]+)", (\d), "([\w-]+)"\)', path.read_text()):
                if prob in problems.problems():
                    refs.add((problem.name, (prob, int(level), anchor)))
    return sorted(refs)


@pytest.mark.parametrize("graded,ref", hint_refs_in_checks(),
                         ids=lambda r: "-".join(map(str, r)) if isinstance(r, tuple) else r)
def test_every_hint_a_check_points_to_is_the_graded_problems_own_and_exists(graded, ref):
    """Graded as `graded`, the pointer (through course.toml's hints_from table for a shared check) names a section of
    `graded`'s own hints, in both languages."""
    problem, level, anchor = hints.resolve(graded, ref)
    assert problem == graded, f"graded as {graded}, {ref} points at {problem}'s hints: add it to hints_from"
    for lang in ("zh", "en"):
        assert anchor in hints.anchors(problem, level, lang), f"{ref} -> {problem} L{level} {anchor} missing in {lang}"
    assert hints.anchor_label(anchor, "en") != anchor or anchor in ("traps",)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_hints_from_table_covers_every_section_of_the_other_problem(problem):
    """A pointer computed at run time (e.g. ("p08", 2, anchor)) resolves too: the table names every anchor of the
    problem it maps from, and each names a section of this problem's hints."""
    table = dict(problems.get(problem).hints_from)
    for other in {source[0] for source in table}:
        sections = {(other, level, anchor) for level in hints.levels(other)
                    for anchor in hints.anchors(other, level, "zh")}
        assert sections <= set(table), f"{problem}'s hints_from.{other} lacks {sorted(sections - set(table))}"
    for source, (level, anchor) in table.items():
        for lang in ("zh", "en"):
            assert anchor in hints.anchors(problem, level, lang), (source, level, anchor, lang)


def test_grading_p08_fast_every_check_and_failure_points_at_p08_fasts_hints(tmp_path):
    """The worker applies the table: the catalogue (each check's own hint) and a shared check's failure (I3.edges
    names p08's key question 5, top_k off) both point into hints/p08-fast."""
    from course.grader.worker import run as run_worker
    from tests.self.helpers import mutate
    from tests.self.mutants_fast import P08_FAST

    fast = problems.get("p08-fast")
    events = []
    run_worker("p08-fast", str(fast.path("stub")), "cpu", "en", list(fast.checks), events.append)
    catalogue = next(e for e in events if e["event"] == "catalogue")["checks"]
    assert {hint[0] for _, _, hint in catalogue.values()} == {"p08-fast"}
    assert catalogue["I5"][2] == ["p08-fast", 2, "s5"] and catalogue["S0"][2] == ["p08-fast", 2, "given"]
    mutant = next(m for m in P08_FAST if m.name == "argmax_for_top_k_one")
    events = []
    run_worker("p08-fast", str(mutate("p08-fast", mutant, tmp_path)), "cpu", "en", ["I3.edges"], events.append)
    failed = next(e for e in events if e["event"] == "end" and e["id"] == "I3.edges")
    assert failed["status"] == "fail" and failed["hint"] == ["p08-fast", 2, "s1"], failed


def test_hint_cli_reveals_levels_in_order_and_records_them(tmp_path):
    state = tmp_path / "s.json"
    code, out, _ = check_sh("p08", "--hint", "--lang", "en", state=state)
    assert code == 0 and "key question" in out.lower() and "<a id" not in out and "--hint 2" in out
    code, out, _ = check_sh("p08", "--hint", "--lang", "en", state=state)
    assert code == 0 and hints.render_terminal(hints.read("p08", 2, "en")).strip() in out
    code, out, _ = check_sh("p08-fast", "--hint", "3", "--yes", state=state)   # no terminal to ask on: --yes
    assert code == 0 and "____" in out
    code, out, _ = check_sh("list", "--lang", "en", state=state)
    assert "hints seen [1, 2]" in out and "hints seen [3]" in out


def test_l3_before_l1_and_l2_asks_first_on_a_terminal(tmp_path):
    import os
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT), COURSE_STATE=str(tmp_path / "s.json"), NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "course.cli", "p08", "--hint", "3", "--lang", "en"], cwd=ROOT,
                            env=env, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    os.write(leader, b"n\n")
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=30) == 0
    text = out.decode()
    assert "Show it anyway? [y/N]" in text and "____" not in text and not (tmp_path / "s.json").exists()
