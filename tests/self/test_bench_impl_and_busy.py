"""The benchmark with a learner's file and on a busy machine: --impl FILE (or mine) times the learner's own
FastSampler, counts its own ops and turns every way a file can fail into one line; a busy machine is timed with
one thread, and a case whose rounds disagree is marked as noise. No wall-clock asserts: a fake clock that only
time.sleep moves shows which code was timed."""
import pytest
import torch

from course import bench
from course.bench.baselines import ROOT


# --impl FILE: the learner's FastSampler, timed beside the others --------------------------------------------
SLOWER = '''

_course_sample = FastSampler.sample


def _slower_sample(self, logits, req_ids, params, prev_tokens):
    torch.ones(1)                      # one more torch op per call than the solution
    time.sleep(SLEEP_S)
    return _course_sample(self, logits, req_ids, params, prev_tokens)


FastSampler.sample = _slower_sample
'''


def slower_copy(tmp_path, sleep_s=0.05):
    """The shipped fast path plus one op and a sleep per sample() call."""
    text = (ROOT / "solutions" / "p08_sampler_fast.py").read_text(encoding="utf-8")
    path = tmp_path / "slower_fast.py"
    path.write_text(f"import time\nSLEEP_S = {sleep_s}\n" + text + SLOWER, encoding="utf-8")
    return path


class FakeClock:
    """time.perf_counter that only time.sleep moves: a method's measured ms are the sleeps it made."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_impl_times_the_learners_own_file_not_the_solution(tmp_path, monkeypatch):
    """A copy of the solution that sleeps 50 ms per call: by a clock only sleeping moves, 'yours' takes exactly
    50 ms a call and every course method 0, and its counts are its own (one op more than the fast path's)."""
    from course.bench import learner
    impl = learner.load(str(slower_copy(tmp_path)))
    clock = FakeClock()
    monkeypatch.setattr(bench.time, "perf_counter", clock.perf_counter)
    monkeypatch.setattr(bench.time, "sleep", clock.sleep)
    result = bench.run_case("tiny", 4, 512, repeat=3, budget_s=1.0, counts=True, impl=impl)
    assert list(result["ms"]) == ["reference", "full_sort", "blog", "fast", "yours", "floor"]
    assert result["ms"]["yours"] == pytest.approx(50.0) and result["ms"]["fast"] == 0.0
    fast, yours = result["counts"]["fast"], result["counts"]["yours"]
    assert (yours.ops, yours.syncs, yours.uploads) == (fast.ops + 1, fast.syncs, fast.uploads)


def test_impl_column_and_counts_in_the_quick_run(tmp_path, capsys, monkeypatch):
    """--impl FILE --quick: the 'yours' column in both tables (100 columns at most), counted per case."""
    clock = FakeClock()
    monkeypatch.setattr(bench.time, "perf_counter", clock.perf_counter)
    monkeypatch.setattr(bench.time, "sleep", clock.sleep)
    path = slower_copy(tmp_path)
    assert bench.main(["p08", "--impl", str(path), "--quick", "--repeat", "1", "--threads", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("yours = ") and path.name in line for line in out)
    heads = [line for line in out if line.startswith("case ")]
    assert len(heads) == 2 and all(head.split()[-2:] in (["yours", "floor"], ["path", "yours"]) for head in heads)
    assert max(len(line) for line in out if not line.startswith(("yours =", "per sample()", "median"))) <= 100
    first = out.index(heads[1]) + 2
    counted = [line.split()[-2:] for line in out[first:first + len(bench.QUICK_CASES)]]
    for fast, yours in counted:                                      # ops / syncs / uploads: one op more
        f, y = [int(v) for v in fast.split("/")], [int(v) for v in yours.split("/")]
        assert y == [f[0] + 1, f[1], f[2]], (fast, yours)


LEARNER_FILES = {   # file body -> what the one line must say
    "stub": (None, ["mine/p08_sampler_fast.py", "not implemented yet", "./check.sh p08-fast"]),
    "raises": ("class FastSampler:\n    def sample(self, logits, req_ids, params, prev_tokens):\n"
               "        return logits[:, 99]\n", ["sample() on a 2-row probe batch raised IndexError"]),
    "wrong tokens": ("class FastSampler:\n    def sample(self, logits, req_ids, params, prev_tokens):\n"
                     "        return logits.softmax(-1)\n",
                     ["called sample() on a 2-row probe batch, returned Tensor [2, 5] torch.float32",
                      "expected a LongTensor [2]"]),
    "no class": ("def sample():\n    pass\n", ["has no FastSampler class"]),
    "syntax": ("class FastSampler(\n", ["cannot be imported (SyntaxError"]),
    "hangs": ("class FastSampler:\n    def sample(self, logits, req_ids, params, prev_tokens):\n"
              "        while True:\n            pass\n", ["ran past 1 s", "./check.sh p08-fast --impl"]),
}


@pytest.mark.parametrize("kind", list(LEARNER_FILES))
def test_a_learner_file_that_cannot_be_timed_gets_one_line(kind, tmp_path, capsys, monkeypatch):
    """A stub, a file that raises, returns no tokens, has no FastSampler, does not import or never returns: exit
    1 with one line on stderr naming the file and the cause (no traceback), before any timing."""
    from course.bench import learner
    monkeypatch.setattr(learner, "LIMIT_S", 1.0)
    body, expected = LEARNER_FILES[kind]
    spec = "mine"
    if body is not None:
        spec = str(tmp_path / f"{kind.replace(' ', '_')}.py")
        (tmp_path / f"{kind.replace(' ', '_')}.py").write_text(body, encoding="utf-8")
    assert bench.main(["p08", "--impl", spec, "--quick", "--repeat", "1", "--threads", "1"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("cannot time it: ") and "Traceback" not in err
    assert all(text in err for text in expected), (err, expected)


def test_impl_mine_is_the_learners_fast_path_file():
    from course.bench import learner
    assert learner.resolve("mine") == ROOT / "mine" / "p08_sampler_fast.py"
    assert learner.grade_command("mine/p08_sampler_fast.py") == "./check.sh p08-fast"
    assert learner.grade_command("x.py") == "./check.sh p08-fast --impl x.py"


def test_a_learner_file_failing_on_a_later_case_names_the_case(tmp_path, capsys):
    """Right on the probe, wrong on V = 4096: one line naming the case it failed on."""
    path = tmp_path / "late.py"
    path.write_text("import torch\nclass FastSampler:\n    def sample(self, logits, req_ids, params, prev_tokens):\n"
                    "        if logits.shape[-1] > 100:\n            raise ValueError('too wide')\n"
                    "        return logits.argmax(-1)\n", encoding="utf-8")
    assert bench.main(["p08", "--impl", str(path), "--quick", "--repeat", "1", "--threads", "1"]) == 1
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("cannot time it")]
    assert len(lines) == 1 and "Traceback" not in err
    assert "sample() on seed 004: k40 p.9 (B=8, V=4096, peaked) raised ValueError: too wide" in lines[0]


# busy machines: one thread, and noise said out loud ------------------------------------------------------------
def test_a_busy_machine_is_timed_with_one_thread_and_says_so(capsys, monkeypatch):
    from course.bench import machine
    threads = torch.get_num_threads()
    monkeypatch.setattr(machine, "measure", lambda: machine.Load(others=1.5, load=2.7, cores=2))
    assert bench.main(["p08", "--quick", "--repeat", "1", "--counts"]) == 0      # counts: no timing, no check
    capsys.readouterr()
    assert bench.main(["p08", "--quick", "--repeat", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(", 1 thread")
    assert out[1] == "busy (others use 1.5 of 2 cores, load 2.7): 1 thread per method"
    assert torch.get_num_threads() == threads                                      # restored after the run


@pytest.mark.parametrize("others, busy", [(0.0, False), (0.4, False), (0.6, True), (2.0, True), (None, False)])
def test_timing_threads_follows_the_load(others, busy):
    from course.bench import machine
    threads = torch.get_num_threads()
    load = machine.Load(others=others, load=None, cores=2)
    assert load.busy == busy
    with machine.timing_threads(load=load, lang="zh") as line:
        assert torch.get_num_threads() == (1 if busy else threads)
        assert ("机器正忙" if busy else "机器空闲") in line
    assert torch.get_num_threads() == threads
    with machine.timing_threads(3) as line:
        assert torch.get_num_threads() == 3 and line == "3 threads (as asked)"
    assert torch.get_num_threads() == threads


def test_measure_sees_at_most_every_core():
    from course.bench import machine
    load = machine.measure(0.05)
    assert load.cores >= 1 and (load.others is None or 0 <= load.others <= load.cores)
    assert load.used is not None or load.load is None


def case_result(ms, spread, batch=8, vocab=4096):
    return {"name": "case", "B": batch, "V": vocab, "mix": "seed004", "logits": "peaked", "device": "cpu",
            "ms": ms, "ratio": {m: t / ms["fast"] for m, t in ms.items()}, "spread": spread}


def test_a_case_is_noise_when_most_rounds_were_slowed_or_the_floor_crawled():
    """Marked in both tables and named in a note, in either language; a steady case and a learner's method that
    varies are not."""
    from course.bench import machine
    ms = {"reference": 1.5, "full_sort": 3.0, "blog": 0.3, "fast": 0.5, "floor": 0.04}
    steady = case_result(ms, {m: 1.1 for m in ms})
    rounds = case_result(ms, dict({m: 1.1 for m in ms}, full_sort=3.5))
    crawl = case_result(dict(ms, floor=7.4), {m: 1.1 for m in ms})              # the floor of [8, 4096]: 7.4 ms
    yours = case_result(dict(ms, yours=0.6), dict({m: 1.1 for m in ms}, yours=9.0))
    assert machine.spread([1.0, 1.0, 5.0]) == 1.0 and machine.spread([1.0, 3.0, 3.0]) == 3.0
    assert [machine.noisy(r) for r in (steady, rounds, crawl, yours)] == [False, True, True, False]
    assert machine.noise(rounds) == {"spread": 3.5} and machine.noise(crawl) == {"floor_ms": 7.4}
    assert machine.floor_limit_ms(8, 4096) == pytest.approx(0.1 + 8 * 4096 * 4 / 0.5e6)        # 0.36 ms
    assert machine.noise_note([steady]) == ""
    note = machine.noise_note([steady, rounds, crawl])
    assert note.startswith("~ = noise: in 2 cases") and "x3.5" in note and "7.40 ms" in note
    assert "2 个场景" in machine.noise_note([rounds, crawl], "zh")
    table = bench.format_table([steady, rounds, crawl]).splitlines()
    assert [line[0] for line in table[2:]] == ["c", "~", "~"]
    markdown = bench.format_table([steady, crawl], markdown=True).splitlines()[2:]
    assert [line.startswith("| ~ case") for line in markdown] == [False, True]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_grades_last_line_prints_a_bench_command_that_runs_as_printed(lang, capsys):
    """p08-fast's next step names `{python} -m course.bench ...` (check.sh's interpreter, from the repo root): its
    options exist and it times mine/ (here a stub: the one-line message, not a usage error)."""
    from course import problems
    line = problems.get("p08-fast").next_step(lang)               # {python}: check.sh's interpreter (course/cli.py)
    command = line[line.index("{python} -m course.bench"):].split()
    assert command[:3] == ["{python}", "-m", "course.bench"]
    assert "--impl" in command and command[command.index("--impl") + 1] == "mine"
    assert bench.main(command[3:] + ["--threads", "1"]) == 1
    assert "mine/p08_sampler_fast.py: not implemented yet" in capsys.readouterr().err


def test_the_deadline_stops_a_loop_and_gives_back_an_outer_alarm():
    import signal
    import time

    from course.bench import learner
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)                               # someone else's alarm
        with pytest.raises(learner.LearnerError, match=r"x\.py: sample\(\) on a loop ran past 0.2 s"):
            learner.guarded_call("x.py", lambda: time.sleep(5), "sample() on a loop", limit_s=0.2)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30 and not fired                                     # theirs is set again
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_file_that_prints_in_sample_does_not_flood_the_run(tmp_path, capsys):
    """Every timed call of a sample() with a print: the lines are counted and said once, never shown."""
    path = tmp_path / "chatty.py"
    path.write_text("print('loading')\n" + (ROOT / "solutions" / "p08_sampler_fast.py").read_text(encoding="utf-8")
                    + "\n_s = FastSampler.sample\n\n\ndef _chatty(self, *args):\n    print('sampling', args[0].shape)\n"
                    "    return _s(self, *args)\n\n\nFastSampler.sample = _chatty\n", encoding="utf-8")
    assert bench.main(["p08", "--impl", str(path), "--quick", "--repeat", "2", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "sampling" not in out and "loading" not in out
    printed = [line for line in out.splitlines() if line.startswith("yours printed ")]
    assert len(printed) == 1 and int(printed[0].split()[2]) >= len(bench.QUICK_CASES) * 3
