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


# busy machines: one thread, and noise said out loud, once ------------------------------------------------------
def test_a_busy_machine_is_timed_with_one_thread_and_says_so_then_gives_one_verdict(capsys, monkeypatch):
    """Before timing: what was measured and the threads chosen, no verdict; after it: exactly one verdict line."""
    from course.bench import machine
    threads = torch.get_num_threads()
    monkeypatch.setattr(machine, "measure", lambda: machine.Load(others=1.5, load=2.7, cores=2))
    assert bench.main(["p08", "--quick", "--repeat", "1", "--counts"]) == 0      # counts: no timing, no check
    capsys.readouterr()
    assert bench.main(["p08", "--quick", "--repeat", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(", 1 thread")
    assert out[1] == "Before timing, other programs used 1.5 of 2 cores: 1 thread per method."
    verdicts = [i for i, line in enumerate(out) if machine.is_verdict(line)]
    assert len(verdicts) == 1 and verdicts[0] > out.index(next(line for line in out if line.startswith("case "))), out
    assert torch.get_num_threads() == threads                                      # restored after the run


@pytest.mark.parametrize("others, busy", [(0.0, False), (0.4, False), (0.6, True), (2.0, True), (None, False)])
def test_timing_threads_follows_the_load_and_says_what_it_measured_not_a_verdict(others, busy):
    from course.bench import machine
    threads = torch.get_num_threads()
    load = machine.Load(others=others, load=None, cores=2)
    assert load.busy == busy
    with machine.timing_threads(load=load, lang="zh") as line:
        assert torch.get_num_threads() == (1 if busy else threads)
        assert line.startswith("计时前") and f"每种方法 {1 if busy else threads} 个线程" in line
        assert not machine.is_verdict(line) and not any(word in line for word in ("空闲", "忙", "噪声"))
    assert torch.get_num_threads() == threads
    with machine.timing_threads(3) as line:
        assert torch.get_num_threads() == 3 and line == "3 threads per method, as asked."
    assert torch.get_num_threads() == threads


def test_measure_sees_at_most_every_core():
    from course.bench import machine
    load = machine.measure(0.05)
    assert load.cores >= 1 and (load.others is None or 0 <= load.others <= load.cores)
    assert load.used is not None or load.load is None


def test_watch_measures_others_not_this_process():
    """This process busy for a while: none of it is counted as another program's."""
    from course.bench import machine
    with machine.Watch() as watch:
        x = torch.randn(256, 256)
        for _ in range(200):
            x = (x @ x).tanh()
    load = watch.load
    assert load.cores >= 1 and (load.others is None or 0 <= load.others <= load.cores)


def case_result(ms, spread, batch=8, vocab=4096):
    return {"name": "case", "B": batch, "V": vocab, "mix": "seed004", "logits": "peaked", "device": "cpu",
            "ms": ms, "ratio": {m: t / ms["fast"] for m, t in ms.items()}, "spread": spread}


MS = {"reference": 1.5, "full_sort": 3.0, "blog": 0.3, "fast": 0.5, "floor": 0.04}
STEADY = case_result(MS, {m: 1.1 for m in MS})
ROUNDS = case_result(MS, dict({m: 1.1 for m in MS}, full_sort=3.5))               # one method's rounds disagree
CRAWL = case_result(dict(MS, floor=7.4), {m: 1.1 for m in MS})                     # the floor of [8, 4096]: 7.4 ms
OVER = case_result(dict(MS, floor=0.3, fast=0.25), {m: 1.1 for m in MS})           # a floor above the fast path


def test_a_case_is_noise_when_most_rounds_were_slowed_or_the_floor_is_no_floor():
    """Marked in both tables; a steady case and a learner's method that varies are not. A floor above the fast path
    (which reads every logit too) is never shown as a floor without the case's noise mark."""
    from course.bench import machine
    yours = case_result(dict(MS, yours=0.6), dict({m: 1.1 for m in MS}, yours=9.0))
    assert machine.spread([1.0, 1.0, 5.0]) == 1.0 and machine.spread([1.0, 3.0, 3.0]) == 3.0
    assert [machine.noisy(r) for r in (STEADY, ROUNDS, CRAWL, yours, OVER)] == [False, True, True, False, True]
    assert machine.noise(ROUNDS) == {"spread": 3.5}
    assert machine.noise(CRAWL) == {"floor_ms": 7.4, "floor_over_fast": 7.4}
    assert machine.noise(OVER) == {"floor_over_fast": 0.3}
    assert machine.floor_limit_ms(8, 4096) == pytest.approx(0.1 + 8 * 4096 * 4 / 0.5e6)        # 0.36 ms
    table = bench.format_table([STEADY, ROUNDS, CRAWL, OVER]).splitlines()
    assert [line[0] for line in table[2:]] == ["c", "~", "~", "~"]
    markdown = bench.format_table([STEADY, CRAWL], markdown=True).splitlines()[2:]
    assert [line.startswith("| ~ case") for line in markdown] == [False, True]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("others", [0.1, 1.4, None])
@pytest.mark.parametrize("cases", ["clean", "noisy"])
def test_one_verdict_per_run_true_to_the_load_and_the_marks(lang, others, cases):
    """The verdict is one paragraph of full sentences beginning with VERDICT_START; it calls the machine quiet only
    when others used little and no case is noise, names noise only when a case is, with the marks the output uses,
    and says why (each kind of noise found)."""
    from course.bench import machine
    during = machine.Load(others=others, load=1.8, cores=2)
    results = [STEADY, STEADY] if cases == "clean" else [STEADY, ROUNDS, OVER]
    marks = ("图里的空心点", "hollow points in the chart")
    text = machine.verdict(results, during, lang, marks)
    assert machine.is_verdict(text) and "\n" not in text and text.endswith("。" if lang == "zh" else ".")
    assert sum(machine.is_verdict(part) for part in text.split(". ")) == 1
    quiet, busy, noise = (("机器空闲", "正忙", "噪声") if lang == "zh" else ("quiet (", "busy", "noise"))
    assert (quiet in text) == (others == 0.1 and cases == "clean")
    assert (busy in text) == (others == 1.4)
    assert (noise in text) == (cases == "noisy")
    assert (marks[0 if lang == "zh" else 1] in text) == (cases == "noisy")
    if cases == "noisy":
        assert ("2" in text and "3" in text and "3.5" in text)                     # 2 of 3 cases, up to x3.5
        assert ("比快速路径还慢" if lang == "zh" else "longer than the fast path") in text
    if others is not None:
        assert f"{others:.1f}" in text and "1.8" not in text                        # the sample, not the load average
    assert "other programs used the CPU" not in text                                # no cause it did not measure
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
    printed = [line for line in out.splitlines() if line.startswith("Your file printed ")]
    assert len(printed) == 1 and int(printed[0].split()[3]) >= len(bench.QUICK_CASES) * 3
