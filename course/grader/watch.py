"""`./check.sh PROBLEM --watch`: grade, then re-grade every time the graded file is saved (as rustlings does).

Plain polling, no extra dependency: twice a second the file's (mtime, size) is read; when it changes, its
content hash decides whether the text really changed (an editor that rewrites the same bytes triggers
nothing). Between polls the process sleeps. The screen is cleared before each report only when stdout is a
terminal (no escape codes in a pipe or a log). Ctrl-C ends it with a clean line and exit status 130.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

from course.lang import pick

POLL_S = 0.5
CLEAR = "\033[2J\033[H"


def fingerprint(path: Path):
    """(mtime_ns, size, sha256) of the file, or None while it does not exist (an editor's atomic save)."""
    try:
        stat = path.stat()
        data = path.read_bytes()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size, hashlib.sha256(data).hexdigest()


def wait_for_change(path: Path, last, poll_s: float = POLL_S, sleep=time.sleep):
    """Sleep-poll the file's (mtime, size); when they change, return the new fingerprint if the content
    differs from `last` (its hash), else keep waiting."""
    stat_seen = last[:2] if last else None
    while True:
        sleep(poll_s)
        try:
            stat = path.stat()
        except OSError:
            continue                           # gone for a moment: an editor's atomic save
        if (stat.st_mtime_ns, stat.st_size) == stat_seen:
            continue
        now = fingerprint(path)
        if now is None:
            continue
        stat_seen = now[:2]
        if last is None or now[2] != last[2]:
            return now


def banner(shown: str, lang: str) -> str:
    return pick(lang, f"正在监视 {shown} — 保存即重新评分，Ctrl-C 退出",
                f"watching {shown} — save to re-grade, Ctrl-C to quit")


def run(path: Path, shown: str, grade_once, lang: str, poll_s: float = POLL_S, max_rounds: int | None = None,
        stream=None) -> int:
    """Grade with grade_once() -> exit code (its report ends with its own next: line) now and after every save of
    `path`. Returns the last exit code after max_rounds gradings (tests), 130 on Ctrl-C."""
    stream = stream or sys.stdout
    tty = stream.isatty()
    code, rounds, last = 1, 0, fingerprint(path)
    try:
        while True:
            if tty:
                stream.write(CLEAR)
            print(banner(shown, lang), file=stream, flush=True)
            if last is None:
                print(pick(lang, f"{shown} 不存在，等它出现……", f"{shown} does not exist; waiting for it..."),
                      file=stream, flush=True)
            else:
                code = grade_once()
                print(pick(lang, f"[{time.strftime('%H:%M:%S')}] 等待 {shown} 的下一次保存……",
                           f"[{time.strftime('%H:%M:%S')}] waiting for the next save of {shown}..."),
                      file=stream, flush=True)
            rounds += 1
            if max_rounds is not None and rounds >= max_rounds:
                return code
            last = wait_for_change(path, last, poll_s)
    except KeyboardInterrupt:
        print("\n" + pick(lang, "已停止监视。", "stopped watching."), file=stream, flush=True)
        return 130


def poll_seconds() -> float:
    """The poll interval; COURSE_WATCH_POLL_S may lower it (the self-tests do), never below 0.05 s."""
    try:
        return max(0.05, float(os.environ.get("COURSE_WATCH_POLL_S", POLL_S)))
    except ValueError:
        return POLL_S
