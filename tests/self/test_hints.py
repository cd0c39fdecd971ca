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
    """Every (problem, level, anchor) a check or one of its failures can point to."""
    refs = set()
    for problem in problems.problems().values():
        for c in checks_for(problem):
            refs.add((c.hint.problem, c.hint.level, c.hint.anchor))
    for path in list((ROOT / "tests").glob("p08*/*.py")) + [ROOT / "course" / "grader" / "checks.py"]:
        for prob, level, anchor in re.findall(r'\("(p08(?:-fast)?)", (\d), "([\w-]+)"\)', path.read_text()):
            refs.add((prob, int(level), anchor))
    return sorted(refs)


@pytest.mark.parametrize("ref", hint_refs_in_checks(), ids=lambda r: f"{r[0]}-L{r[1]}-{r[2]}")
def test_every_hint_a_check_points_to_exists_in_both_languages(ref):
    problem, level, anchor = ref
    for lang in ("zh", "en"):
        assert anchor in hints.anchors(problem, level, lang), f"{ref} missing in {lang}"
    assert hints.anchor_label(anchor, "en") != anchor or anchor in ("traps",)


def test_hint_cli_reveals_levels_in_order_and_records_them(tmp_path):
    state = tmp_path / "s.json"
    code, out, _ = check_sh("p08", "--hint", "--lang", "en", state=state)
    assert code == 0 and "key question" in out.lower() and "<a id" not in out and "--hint 2" in out
    code, out, _ = check_sh("p08", "--hint", "--lang", "en", state=state)
    assert code == 0 and hints.render_terminal(hints.read("p08", 2, "en")).strip() in out
    code, out, _ = check_sh("p08-fast", "--hint", "3", state=state)          # stdin is not a terminal: no question
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
