"""./check.sh PROBLEM --watch: grades, re-grades on every save, clears the screen only on a terminal,
ends cleanly on Ctrl-C; and the polling helpers underneath."""
import io
import json
import os
import selectors
import signal
import subprocess
import sys
import time

import pytest

from course.grader import watch
from course.problems import ROOT, get


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_polling_sees_a_save_but_not_a_touch(tmp_path):
    path = tmp_path / "f.py"
    path.write_text("a = 1\n")
    first = watch.fingerprint(path)
    naps = []

    def sleep(seconds):                      # each nap: a touch (same bytes), then a real save on the 3rd nap
        naps.append(seconds)
        if len(naps) == 1:
            os.utime(path, ns=(first[0] + 10**9, first[0] + 10**9))
        if len(naps) == 3:
            path.write_text("a = 2\n")

    now = watch.wait_for_change(path, first, poll_s=0.5, sleep=sleep)
    assert now[2] != first[2] and len(naps) == 3 and set(naps) == {0.5}


@pytest.mark.parametrize("stream,clears", [(io.StringIO(), False), (FakeTTY(), True)])
def test_rounds_clear_only_a_terminal(tmp_path, stream, clears):
    path = tmp_path / "mine.py"
    path.write_text("x = 1\n")
    calls = []

    def grade_once():
        calls.append(path.read_text())
        if len(calls) == 1:
            path.write_text("x = 2\n")       # the learner saves while the first report is on screen
        return 1

    code = watch.run(path, "mine.py", grade_once, "en", poll_s=0.01, max_rounds=2, stream=stream)
    out = stream.getvalue()
    assert code == 1 and calls == ["x = 1\n", "x = 2\n"]
    assert out.count("watching mine.py — save to re-grade, Ctrl-C to quit") == 2
    assert (watch.CLEAR in out) == clears and ("\033" in out) == clears


def test_ctrl_c_while_waiting_is_a_clean_exit_130(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("x = 1\n")
    stream = io.StringIO()

    def grade_once():
        raise KeyboardInterrupt

    assert watch.run(path, "mine.py", grade_once, "zh", poll_s=0.01, stream=stream) == 130
    assert "已停止监视" in stream.getvalue()


def _ctrl_c_as_on_a_terminal():
    """In the child before it starts: Ctrl-C ends it as it would from a terminal, even when these tests run under a
    shell that started them in the background (which hands its children SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _read_until(proc, sel, out, needle, count, deadline):
    """Read the child's stdout until `needle` appears `count` times (or the deadline passes)."""
    while out[0].count(needle) < count and time.monotonic() < deadline:
        for _ in sel.select(timeout=0.5):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if chunk:
                out[0] += chunk.decode("utf-8", "replace")
    return out[0].count(needle) >= count


@pytest.mark.parametrize("lang,banner,summary,stopped,next_step", [
    ("en", "watching", "checks passed", "stopped watching.", "next: write apply_repetition_penalty (step 1"),
    ("zh", "正在监视", "项检查通过", "已停止监视。", "下一步：写 apply_repetition_penalty（第 1 步")])
def test_check_sh_watch_regrades_on_save_and_stops_on_ctrl_c(tmp_path, lang, banner, summary, stopped, next_step):
    p08 = get("p08")
    impl = tmp_path / "attempt.py"
    impl.write_text(p08.path("stub").read_text(encoding="utf-8"), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COURSE_WATCH_POLL_S="0.1",
               COURSE_STATE=str(tmp_path / "s.json"))
    proc = subprocess.Popen([sys.executable, "-m", "course.cli", "p08", "--watch", "--impl", str(impl), "--lang", lang,
                             "--only", "E1.penalty"], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_ctrl_c_as_on_a_terminal)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    out = [""]
    try:
        deadline = time.monotonic() + 120
        assert _read_until(proc, sel, out, summary, 1, deadline), out[0]
        assert "0/1" in out[0] and banner in out[0] and "attempt.py" in out[0]
        assert _read_until(proc, sel, out, next_step, 1, deadline), out[0]   # the report ends with what to do next
        impl.write_text(p08.path("solution").read_text(encoding="utf-8"), encoding="utf-8")      # the learner saves
        assert _read_until(proc, sel, out, summary, 2, deadline), out[0]
        assert "1/1" in out[0].split(banner)[-1]
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        rest = proc.stdout.read().decode("utf-8", "replace")
        err = proc.stderr.read().decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out[0] + rest
    assert code == 130, (text, err)
    assert stopped in text and "Traceback" not in text + err and "\033" not in text


def test_keys_on_a_stdin_that_is_not_a_terminal_read_nothing_and_never_fail():
    naps = []
    for stream in (io.StringIO("h\n"), FakeTTY("h"), None):         # a FakeTTY has no file descriptor
        keys = watch.Keys(stream if stream is not None else io.StringIO())
        with keys:
            assert not keys.active and keys.wait(0.01, sleep=naps.append) == ""
    assert naps == [0.01, 0.01, 0.01]


def test_h_in_watch_shows_the_next_hint_level_and_watching_goes_on(tmp_path):
    """On a terminal (stdin a pty), `h` prints L1, then L2, records them as seen, then asks before L3 (a no leaves it
    unseen, a yes shows it), and the watch goes on: a save still re-grades, Ctrl-C still ends it with 130, and the
    terminal's line mode is back afterwards."""
    import pty
    import termios

    p08 = get("p08")
    impl = tmp_path / "attempt.py"
    impl.write_text(p08.path("stub").read_text(encoding="utf-8"), encoding="utf-8")
    state = tmp_path / "s.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COURSE_WATCH_POLL_S="0.1", COURSE_STATE=str(state))
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "course.cli", "p08", "--watch", "--impl", str(impl), "--lang", "en",
                             "--only", "E1.penalty"], cwd=ROOT, env=env, stdin=follower, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_ctrl_c_as_on_a_terminal)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    out = [""]
    try:
        deadline = time.monotonic() + 120
        assert _read_until(proc, sel, out, "waiting for the next save", 1, deadline), out[0]
        assert "h for the next hint level" in out[0]
        os.write(leader, b"h")
        assert _read_until(proc, sel, out, "still watching", 1, deadline), out[0]
        assert "hint level 1 (./check.sh p08 --hint 1)" in out[0] and "Key questions" in out[0], out[0]
        os.write(leader, b"xh")                                      # another key does nothing; h: level 2
        assert _read_until(proc, sel, out, "still watching", 2, deadline), out[0]
        assert "hint level 2" in out[0] and json.loads(state.read_text())["p08"]["hints_seen"] == [1, 2]
        os.write(leader, b"h")                                       # L3 asks first (course.hints.L3_RULE)
        assert _read_until(proc, sel, out, "Show it anyway? [y/N]", 1, deadline), out[0]
        os.write(leader, b"n")
        assert _read_until(proc, sel, out, "still watching", 3, deadline), out[0]
        assert "not shown; ./check.sh p08 --hint 3 --yes shows it" in out[0] and "hint level 3" not in out[0]
        os.write(leader, b"hy")                                      # typed at once: the answer is not lost
        assert _read_until(proc, sel, out, "still watching", 4, deadline), out[0]
        assert "hint level 3" in out[0] and json.loads(state.read_text())["p08"]["hints_seen"] == [1, 2, 3]
        impl.write_text(p08.path("solution").read_text(encoding="utf-8"), encoding="utf-8")
        assert _read_until(proc, sel, out, "checks passed", 2, deadline), out[0]
        assert "1/1" in out[0].split("watching")[-1]
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        err = proc.stderr.read().decode("utf-8", "replace")
        line_mode = termios.tcgetattr(follower)[3] & termios.ICANON
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
        os.close(follower)
    assert code == 130 and "Traceback" not in out[0] + err and line_mode
