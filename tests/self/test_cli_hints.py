"""One rule for L3, the level that gives the answers (course.hints.L3_RULE): on a terminal it asks y/N first unless
--yes; without a terminal it needs --yes (a one-line note, exit 1); a 'no' says how to see it later. --watch's h
(test_watch.py) and the notebook's buttons follow it, and README.md and -h say it in the same words."""
import json
import os
import pty
import subprocess
import sys

import pytest

from course import hints
from course.problems import ROOT
from tests.self.helpers import check_sh


def seen(state):
    return json.loads(state.read_text())["p08"]["hints_seen"] if state.exists() else []


@pytest.mark.parametrize("lang,note", [
    ("en", "L3 gives the answers and there is no terminal to confirm on: ./check.sh p08 --hint 3 --yes shows it"),
    ("zh", "L3 是答案级提示，这里没有终端可以确认：./check.sh p08 --hint 3 --yes 会显示它")])
def test_without_a_terminal_l3_needs_yes(tmp_path, lang, note):
    state = tmp_path / "s.json"
    code, out, err = check_sh("p08", "--hint", "3", "--lang", lang, state=state)
    assert code == 1 and not out and err.strip() == note and seen(state) == []
    code, out, _ = check_sh("p08", "--hint", "3", "--yes", "--lang", lang, state=state)
    assert code == 0 and out.strip() and seen(state) == [3]


def test_the_next_level_is_l3_after_l1_and_l2_and_asks_the_same(tmp_path):
    state = tmp_path / "s.json"
    for level in (1, 2):
        assert check_sh("p08", "--hint", state=state)[0] == 0
    assert seen(state) == [1, 2]
    code, out, err = check_sh("p08", "--hint", "--lang", "en", state=state)      # the next level: 3
    assert code == 1 and "--hint 3 --yes" in err and seen(state) == [1, 2]


def on_a_terminal(answer: str, state, *args):
    """./check.sh p08 --hint 3 with stdin a terminal that types `answer`."""
    leader, follower = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COURSE_STATE=str(state))
    try:
        os.write(leader, answer.encode() + b"\n")
        proc = subprocess.run([sys.executable, "-m", "course.cli", "p08", "--hint", "3", "--lang", "en", *args],
                              cwd=ROOT, env=env, stdin=follower, capture_output=True, text=True, timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    return proc.returncode, proc.stdout


def test_on_a_terminal_l3_asks_first_and_a_no_says_what_to_do_instead(tmp_path):
    state = tmp_path / "s.json"
    code, out = on_a_terminal("n", state)
    assert code == 0 and out.startswith(hints.question("en").strip()), out
    assert out.strip().endswith("not shown; ./check.sh p08 --hint 3 --yes shows it, or try --hint 2 first"), out
    assert seen(state) == []
    code, out = on_a_terminal("y", state)
    assert code == 0 and hints.question("en").strip() in out and len(out.splitlines()) > 5 and seen(state) == [3]
    code, out = on_a_terminal("", state, "--yes")                      # --yes: no question
    assert code == 0 and "[y/N]" not in out and seen(state) == [3]


def test_the_rule_is_said_in_the_same_words_by_the_readme_and_help():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## check.sh"):readme.index("## Layout")]
    assert hints.L3_RULE[1] in section and "./check.sh -h" in section
    for lang, rule in zip(("zh", "en"), hints.L3_RULE):
        code, out, _ = check_sh("-h", "--lang", lang)
        assert code == 0 and rule in out


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_notebooks_l3_button_asks_in_the_same_words(lang, tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_STATE", str(tmp_path / "s.json"))
    from course.notebook.panel_hints import hint_buttons
    box = hint_buttons("p08", lang)
    box._p08_buttons["levels"][2].click()
    assert hints.question(lang).replace("[y/N]", "").strip() in box._p08_state["text"]
    assert 3 not in box._p08_state["revealed"]
