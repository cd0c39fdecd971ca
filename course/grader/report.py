"""Render a grading run for the terminal: one line per check, a short failure block under each ✗."""
from __future__ import annotations

import os
import re
import sys
import textwrap

from course.hints import anchor_label
from course.lang import pick

MAX_LINE = 220      # a report line's width; a longer explanation goes on at most MAX_FOLDS lines, then "…"
MAX_FOLDS = 3


def _color(code: str, text: str, enabled: bool) -> str:
    return f"\033[{code}m{text}\033[0m" if enabled else text


def use_color(stream=sys.stdout) -> bool:
    return stream.isatty() and os.environ.get("NO_COLOR") is None


def clip(text: str) -> str:
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 1] + "…"


def fold(text: str) -> list:
    """text as lines of at most MAX_LINE characters, broken at spaces where it can be: at most MAX_FOLDS of them,
    the last clipped with "…" (so a long explanation stays whole, and a flood from a learner's value stays short)."""
    if len(text) <= MAX_LINE:
        return [text]
    pieces = textwrap.wrap(text, MAX_LINE, break_long_words=True, break_on_hyphens=False, drop_whitespace=True)
    return pieces[:MAX_FOLDS - 1] + [clip(" ".join(pieces[MAX_FOLDS - 1:]))] if len(pieces) > MAX_FOLDS else pieces


def _folded(lines) -> list:
    return [piece for line in lines for piece in fold(line)]


def hint_of(result, check):
    """(problem, level, anchor) of the hint that helps: the one the failure names, else the check's; or None."""
    return result.hint or (check and check.hint and list(check.hint))


def hint_command(hint, lang: str) -> tuple:
    """('./check.sh <problem> --hint 1', 'key question 4') for a hint (problem, level, anchor)."""
    prob, level, anchor = hint
    return f"./check.sh {prob} --hint {level}", anchor_label(anchor, lang)


def hint_line(hint, lang: str) -> str:
    cmd, label = hint_command(hint, lang)
    return pick(lang, f"卡住了？{cmd}（{label}）", f"stuck? {cmd}   ({label})")


def in_lang(line: str, lang: str) -> str:
    """A check's evidence line in the report's language: a line that begins with the English "called " (the fast
    path's checks write their calls so in both languages) begins with 调用 in a Chinese report."""
    return "调用 " + line[len("called "):] if lang != "en" and line.startswith("called ") else line


def failure_block(result, check, lang: str, verbose: bool) -> list:
    """The 1-4 lines under a ✗: what was called and what came back, where, which hint to read. A step not written
    yet is one line, with its place (the report's next: line names the hint), so an untouched stub fits a screen."""
    lines = []
    if result.status == "todo" and result.lines and not verbose:
        at = pick(lang, f"，位置 {result.where}", f" — at {result.where}") if result.where else ""
        return _folded([in_lang(result.lines[0], lang) + at])
    if result.status == "timeout":
        lines.append(pick(lang, f"超时：{result.seconds:.0f} 秒内没有结束（死循环，或者太慢？）",
                          f"timed out: did not finish within {result.seconds:.0f} s "
                          f"(an endless loop, or far too slow?)"))
        lines.extend(result.lines)                   # where the learner's code was when it was stopped
    elif result.status == "crash":
        lines.append(pick(lang, f"进程在这项检查中退出了（{' '.join(result.lines)}）",
                          f"the process died during this check ({' '.join(result.lines)})"))
    elif result.status == "skip":
        lines.append(pick(lang, "没有运行：总时间用完了", "not run: the time budget is used up"))
    else:
        lines.extend(in_lang(line, lang) for line in result.lines)
    if result.where:
        lines.append(pick(lang, f"位置 {result.where}", f"at {result.where}"))
    hint = hint_of(result, check)
    if hint and result.status not in ("missing", "skip"):
        lines.append(hint_line(hint, lang))
    if verbose:
        if result.output_text:
            lines += ["--- output ---", *result.output_text.rstrip().splitlines()[-30:]]
        if result.traceback:
            lines += ["--- traceback ---", *result.traceback.rstrip().splitlines()[-40:]]
    return _folded(lines) if not verbose else lines


def render_result(result, check, lang: str, verbose: bool, color: bool) -> list:
    title = check.title(lang) if check else result.id
    if result.passed:
        shown = result.output_text.rstrip().splitlines()[-30:] if verbose else []
        notes = [f"      {line}" for line in _folded(result.lines)]
        return [f"  {_color('32', '✓', color)} {title}"] + notes + [f"      | {line}" for line in shown]
    out = [f"  {_color('31', '✗', color)} {title}"]
    out += [f"      {line}" for line in failure_block(result, check, lang, verbose)]
    return out


# "fix E2.top_p first" / "先修好 E2.top_p": a failure that names another check as its cause (tests/p08/diagnose.py)
ROOT_EN = re.compile(r"fix ([\w.\-]+) first")
ROOT_ZH = re.compile(r"先修好 ([\w.\-]+)")
_CALLED = re.compile(r"^(?:called|调用) ([A-Za-z_]\w*)\(")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")
# evidence lines that hold only numbers of one draw (the same words under different causes): not a cause by themselves
_EVIDENCE_ONLY = re.compile(r"^token #: (?:observed|观测)")
DIAGNOSIS_CHARS = 60     # a last line this long is a diagnosis sentence, not a value: the same one is one cause


def root_of(result):
    """(check id, the line that names it) when the failure says that another check's rule is its cause; else None."""
    for line in result.lines or ():
        found = ROOT_EN.search(line) or ROOT_ZH.search(line)
        if found and found[1] != result.id:
            return found[1], line
    return None


def cause_keys(result) -> list:
    """The keys under which a failure's cause is known. Two failures that share a key have one cause: the same
    missing step, the same crash at the same line, the same function of the learner's returning wrong values (the
    same `where`), the same explanation (its numbers aside) at the same place, or the same check named as the cause
    ("fix X first"), which is also the cause of check X's own failure."""
    if result.passed or result.status == "skip" or not result.lines:
        return []
    if result.status != "fail":
        return [(result.status, result.lines[0], result.where)]
    keys = []
    if root := root_of(result):
        keys.append(("root", root[0]))
    keys.append(("root", result.id))
    named = [m[1] for m in map(_CALLED.match, result.lines) if m]
    if result.where and any(name != "sample" for name in named):
        keys.append(("where", result.where))
    explained = [_NUMBER.sub("#", line) for line in result.lines[1:]]
    explained = [line for line in explained if not _EVIDENCE_ONLY.match(line)]
    if explained:
        keys.append(("same", result.where, tuple(explained)))
    if explained and len(explained[-1]) >= DIAGNOSIS_CHARS:       # the same diagnosis sentence, its numbers aside
        keys.append(("diagnosis", result.where, explained[-1]))
    return keys


class Collapser:
    """Renders results one by one, one block per cause. A cause shared by several checks (the same missing step, the
    same crash at the same line, the same wrong return value, the same check named as the cause) is shown once,
    under the first check it blocks; the later checks it blocks are listed on one line per cause at the end."""

    def __init__(self, lang: str, verbose: bool, color: bool):
        self.lang, self.verbose, self.color = lang, verbose, color
        self.cause = {}          # key -> id of the check whose block shows that cause
        self.repeats = {}        # cause id -> [ids of later checks with the same cause]

    def render(self, result, check) -> list:
        keys = [] if self.verbose else cause_keys(result)
        if not keys:
            return render_result(result, check, self.lang, self.verbose, self.color)
        known = next((self.cause[k] for k in keys if k in self.cause), None)
        if known is None:
            for k in keys:
                self.cause[k] = result.id
            return render_result(result, check, self.lang, self.verbose, self.color)
        for k in keys:
            self.cause.setdefault(k, known)
        self.repeats.setdefault(known, []).append(result.id)
        return []

    def tail(self) -> list:
        """One line per cause that blocks more checks than the one it is shown under."""
        out = []
        for first, ids in self.repeats.items():
            mark, n = _color("31", "✗", self.color), len(ids)
            marked = [f"{mark} {cid}" for cid in ids]         # each blocked check keeps its ✗, as on its own line
            out += [f"  {line}" for line in fold(pick(
                self.lang, f"{mark} 与 {first} 同一个原因，还有 {n} 项检查没通过：{'、'.join(marked)}",
                f"{mark} the same cause as {first} blocks {n} more check{'s' if n > 1 else ''}: {', '.join(marked)}"))]
        return out


def not_run_line(timed_out: str, ids: list, lang: str) -> str:
    """One line for the checks a time-out stopped: they would call the same code, so they were not run."""
    return clip(pick(lang, f"  ✗ 没有运行：文件在 {timed_out} 中超时（{len(ids)} 项）：{', '.join(ids)}",
                     f"  ✗ not run: the file timed out in {timed_out} ({len(ids)} check{'s' * (len(ids) > 1)}): "
                     f"{', '.join(ids)}"))


def printed_line(lines: int, lang: str) -> str:
    """One line for what the learner's file printed during the checks (each check's output is kept for -v)."""
    return pick(lang, f"你的文件在检查中打印了 {lines} 行；-v 可查看",
                f"your file printed {lines} line{'s' * (lines != 1)} during the checks; -v shows them")


def next_line(result, check, lang: str) -> str:
    """The report's last line when something failed: the first thing to work on (the root cause the first block
    names, when it names another check), and the hint that helps."""
    command = ""
    if hint := hint_of(result, check):
        cmd, label = hint_command(hint, lang)
        command = cmd + pick(lang, f"（{label}）", f" ({label})")
    if result.status == "todo" and result.lines:
        what = result.lines[0].removeprefix("not implemented yet: ").removeprefix("尚未实现：")
        return clip(pick(lang, f"下一步：写 {what}" + (f" — {command}" if command else ""),
                         f"next: write {what}" + (f" — {command}" if command else "")))
    if root := root_of(result):
        return clip(pick(lang, f"下一步：{root[1]}", f"next: {root[1]}") + (f" — {command}" if command else ""))
    title = check.title(lang) if check else result.id
    return clip(pick(lang, f"下一步：修好 {title}" + (f" — {command}" if command else ""),
                     f"next: fix {title}" + (f" — {command}" if command else "")))


def render_import_error(result, impl: str, lang: str, verbose: bool) -> list:
    if result.status == "timeout":
        head = pick(lang, f"✗ 导入 {impl} 没有在限定时间内结束（模块顶层有死循环？）",
                    f"✗ importing {impl} did not finish in time (an endless loop at module level?)")
    elif result.status == "crash":
        head = pick(lang, f"✗ 导入 {impl} 时进程退出了", f"✗ the process died while importing {impl}")
    else:
        head = pick(lang, f"✗ 无法导入 {impl}", f"✗ cannot import {impl}")
    out = [head] + [f"      {line}" for line in _folded(result.lines)]
    if result.where:
        out.append(f"      {pick(lang, '位置', 'at')} {result.where}")
    if verbose and result.traceback:
        out += result.traceback.rstrip().splitlines()
    return out


def summary(passed: int, total: int, failed_titles: list, lang: str, color: bool) -> list:
    out = []
    if failed_titles:
        shown = (failed_titles if len(failed_titles) <= 4
                 else list(dict.fromkeys(t.split(" ")[0] for t in failed_titles)))
        out.append(pick(lang, "未通过：" + "、".join(shown), "failed: " + ", ".join(shown)))
    line = pick(lang, f"{passed}/{total} 项检查通过", f"{passed}/{total} checks passed")
    out.append(_color("32" if passed == total and total else "31", line, color))
    return out
