"""Tiered hints: hints/<problem>/L<n>.md (Chinese) and hints/<problem>/en/L<n>.md (English)."""
from __future__ import annotations

import re

from course.lang import pick
from course.problems import get

LEVELS = (1, 2, 3)
ANCHOR = re.compile(r'<a id="([\w-]+)"></a>\s*')
ANSWERS = 3          # the level that gives the answers: it is shown only after a yes (L3_RULE)
# The one rule for L3, said the same way by ./check.sh -h, README.md's check.sh section, --watch and the notebook
L3_RULE = ("L3 是答案：先问 y/N；--yes 直接显示（没有终端时必须加）",
           "L3 gives the answers: it asks y/N first; --yes shows it at once (needed without a terminal)")

_LABELS = {  # anchor prefix -> (zh, en); the number, if any, follows
    "q": ("关键问题", "key question"),
    "e": ("例", "example"),
    "d": ("细节：第 {n} 步", "details: step {n}"),
    "s": ("思路：第 {n} 步", "approach: step {n}"),
    "a": ("答案", "answer"),
}
_NAMED = {"traps": ("常见坑", "common traps"), "trace": ("逐步追踪", "step-by-step trace"),
          "skeleton": ("代码骨架", "skeleton"), "given": ("给定代码", "given code"),
          "compile": ("为 GPU 编译", "compiling for a GPU")}


def anchor_label(anchor: str, lang: str) -> str:
    """'q4' -> 'key question 4' / '关键问题 4'; 's4a' -> 'approach: step 4a'."""
    if anchor in _NAMED:
        return pick(lang, *_NAMED[anchor])
    match = re.fullmatch(r"([a-z])(\d+[a-z]?)", anchor)          # s4a: a lettered part of step 4
    if not match or match[1] not in _LABELS:
        return anchor
    zh, en = _LABELS[match[1]]
    n = match[2]
    if "{n}" in zh:
        return pick(lang, zh.format(n=n), en.format(n=n))
    return pick(lang, f"{zh} {n}", f"{en} {n}")


def resolve(problem: str, hint):
    """A check's hint (problem, level, anchor) as `problem` shows it. A check that two problems share points into
    one problem's hints; graded as the other problem, it points at that problem's own hints instead, through
    course.toml's `hints_from` table (e.g. [problems.p08-fast.hints_from.p08] "1 q6" = "2 s6"). A pointer the
    table does not name stays as it is."""
    if hint is None:
        return None
    source = (hint[0], int(hint[1]), hint[2])
    if source[0] == problem:
        return source
    mapped = dict(get(problem).hints_from).get(source)
    return (problem, *mapped) if mapped else source


def hint_path(problem: str, level: int, lang: str):
    base = get(problem).path("hints")
    return (base / "en" if lang == "en" else base) / f"L{level}.md"


def levels(problem: str) -> tuple:
    """The hint levels a problem has (a level is there when its Chinese file is)."""
    return tuple(level for level in LEVELS if hint_path(problem, level, "zh").is_file())


def read(problem: str, level: int, lang: str) -> str:
    """The markdown of a hint level."""
    if level not in levels(problem):
        raise ValueError(f"{problem} has hint levels {', '.join(map(str, levels(problem))) or '(none)'}, not {level}")
    return hint_path(problem, level, lang).read_text(encoding="utf-8")


def anchors(problem: str, level: int, lang: str) -> set:
    return set(ANCHOR.findall(read(problem, level, lang)))


def render_terminal(markdown: str, color: bool = False) -> str:
    """Markdown made readable in a terminal: anchors dropped, headings emphasised, code indented."""
    out, in_code = [], False
    for line in markdown.splitlines():
        line = ANCHOR.sub("", line)
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            out.append("    " + line)
        elif line.startswith("#"):
            text = line.lstrip("#").strip()
            out.append(f"\033[1m{text}\033[0m" if color else text)
            if not line.startswith("###"):
                out.append("─" * min(60, max(8, len(text) * 2)))
        else:
            out.append(re.sub(r"\*\*(.+?)\*\*", "\033[1m\\1\033[0m" if color else "\\1", line))
    return "\n".join(out).strip() + "\n"


def question(lang: str) -> str:
    """What L3 asks before it shows the answers."""
    return pick(lang, "L3 是答案级提示（完整的代码骨架）。现在就看吗？[y/N] ",
                "L3 gives the answers (the full skeleton). Show it anyway? [y/N] ")


def not_shown(problem: str, seen, lang: str) -> str:
    """The line after a 'no' to L3's question: how to see it later, or what to read first."""
    first = pick(lang, "，或者先看 --hint 2", ", or try --hint 2 first") if 2 not in set(seen) else ""
    return pick(lang, f"没有显示；./check.sh {problem} --hint 3 --yes 会显示它{first}",
                f"not shown; ./check.sh {problem} --hint 3 --yes shows it{first}")


def needs_yes(problem: str, lang: str) -> str:
    """The note when L3 is asked for without a terminal to answer on."""
    return pick(lang, f"L3 是答案级提示，这里没有终端可以确认：./check.sh {problem} --hint 3 --yes 会显示它",
                f"L3 gives the answers and there is no terminal to confirm on: ./check.sh {problem} --hint 3 --yes "
                f"shows it")


def next_level(seen, available=LEVELS) -> int:
    """The first level not yet revealed (the last once all are)."""
    return next((level for level in available if level not in set(seen)), available[-1])
