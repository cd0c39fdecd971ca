"""`./check.sh PROBLEM --watch`: grade, then re-grade every time the graded file is saved (as rustlings does).

Plain polling, no extra dependency: twice a second the file's (mtime, size) is read; when it changes, its
content hash decides whether the text really changed (an editor that rewrites the same bytes triggers
nothing). Between polls the process sleeps. The screen is cleared before each report only when stdout is a
terminal (no escape codes in a pipe or a log). Ctrl-C ends it with a clean line and exit status 130.

Keys: when stdin is a terminal, it is read a key at a time without blocking while the file is watched (cbreak mode,
restored on exit), and `h` shows the next hint level without leaving watch: L1, L2, then L3, which asks y/N first
(course.hints.L3_RULE). When stdin is not a terminal (a pipe, /dev/null, a test) nothing reads it.
"""
from __future__ import annotations

import hashlib
import os
import select
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


class Keys:
    """Key presses on a terminal's stdin, one at a time and without Enter (cbreak mode inside `with`), read without
    blocking; on any other stdin, or where the terminal cannot be set, no key ever comes and nothing is read."""

    def __init__(self, stream=None):
        stream = sys.stdin if stream is None else stream
        try:
            self.fd = stream.fileno() if stream.isatty() else None
        except (AttributeError, ValueError, OSError):      # closed, or no file descriptor at all
            self.fd = None
        self.saved = None
        self.pending = ""          # keys read but not handled yet (e.g. the answer typed right after h)

    @property
    def active(self) -> bool:
        return self.fd is not None

    def __enter__(self):
        if self.fd is not None:
            import termios
            import tty
            try:
                self.saved = termios.tcgetattr(self.fd)
                tty.setcbreak(self.fd)
            except (termios.error, OSError):
                self.fd = None
        return self

    def __exit__(self, *exc):
        if self.fd is not None and self.saved is not None:
            import termios
            try:
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
            except (termios.error, OSError):
                pass
        return False

    def wait(self, seconds: float, sleep=time.sleep) -> str:
        """Wait up to `seconds`; the keys pressed meanwhile ('' when none, and always on a stdin that is not a
        terminal)."""
        if self.fd is None:
            sleep(seconds)
            return ""
        try:
            ready, _, _ = select.select([self.fd], [], [], seconds)
            data = os.read(self.fd, 64) if ready else b""
        except OSError:
            self.fd = None
            return ""
        if ready and not data:                             # the terminal went away: stop reading it
            self.fd = None
        return data.decode("utf-8", "ignore")

    def next_key(self) -> str:
        """The next key: one already read, else wait for one ('' when there is no terminal to read)."""
        while not self.pending and self.fd is not None:
            self.pending = self.wait(3600)
        key, self.pending = self.pending[:1], self.pending[1:]
        return key


def wait_for_change(path: Path, last, poll_s: float = POLL_S, sleep=time.sleep, keys=None, on_key=None):
    """Sleep-poll the file's (mtime, size); when they change, return the new fingerprint if the content
    differs from `last` (its hash), else keep waiting. With `keys` (a Keys), each key pressed meanwhile goes to
    on_key(key)."""
    stat_seen = last[:2] if last else None
    while True:
        if keys is not None and keys.active:
            keys.pending += keys.wait(poll_s, sleep)
            while keys.pending:
                key, keys.pending = keys.pending[0], keys.pending[1:]
                if on_key:
                    on_key(key)
        else:
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


def banner(shown: str, lang: str, hint_key: bool = False) -> str:
    if hint_key:
        return pick(lang, f"正在监视 {shown} — 保存即重新评分，按 h 看下一级提示，Ctrl-C 退出",
                    f"watching {shown} — save to re-grade, h for the next hint level, Ctrl-C to quit")
    return pick(lang, f"正在监视 {shown} — 保存即重新评分，Ctrl-C 退出",
                f"watching {shown} — save to re-grade, Ctrl-C to quit")


def run(path: Path, shown: str, grade_once, lang: str, poll_s: float = POLL_S, max_rounds: int | None = None,
        stream=None, show_hint=None, keys=None) -> int:
    """Grade with grade_once() -> exit code (its report ends with its own next: line) now and after every save of
    `path`. show_hint(ask) prints the next hint level: `h` on a terminal's stdin (keys, a Keys; by default sys.stdin's)
    calls it between two gradings, and ask(question) -> bool puts a y/N question (before L3) and reads one key.
    Returns the last exit code after max_rounds gradings (tests), 130 on Ctrl-C."""
    stream = stream or sys.stdout
    keys = keys if keys is not None else Keys()
    with keys:
        return _watch(path, shown, grade_once, lang, poll_s, max_rounds, stream, show_hint, keys)


def _watch(path, shown, grade_once, lang, poll_s, max_rounds, stream, show_hint, keys) -> int:
    tty = stream.isatty()
    hint_key = show_hint is not None and keys.active

    def ask(question: str) -> bool:
        print(question, end="", file=stream, flush=True)
        key = keys.next_key()
        print(key if key.isprintable() else "", file=stream, flush=True)
        return key.lower() == "y"

    def on_key(key):
        if key.lower() == "h" and hint_key:
            print(file=stream, flush=True)
            show_hint(ask)
            print(pick(lang, f"[{time.strftime('%H:%M:%S')}] 继续监视 {shown}（h：下一级提示）……",
                       f"[{time.strftime('%H:%M:%S')}] still watching {shown} (h: the next hint level)..."),
                  file=stream, flush=True)

    code, rounds, last = 1, 0, fingerprint(path)
    try:
        while True:
            if tty:
                stream.write(CLEAR)
            print(banner(shown, lang, hint_key), file=stream, flush=True)
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
            last = wait_for_change(path, last, poll_s, keys=keys, on_key=on_key)
    except KeyboardInterrupt:
        print("\n" + pick(lang, "已停止监视。", "stopped watching."), file=stream, flush=True)
        return 130


def poll_seconds() -> float:
    """The poll interval; COURSE_WATCH_POLL_S may lower it (the self-tests do), never below 0.05 s."""
    try:
        return max(0.05, float(os.environ.get("COURSE_WATCH_POLL_S", POLL_S)))
    except ValueError:
        return POLL_S
