"""The fast-path notebook's benchmark figures and the batch-invariance experiment in miniature, driven without a
kernel: the crossover is where the speed-up crosses 1, noise is drawn hollow and said, the learner's file joins
the timing once it runs and leaves it with one line when it fails, legends sit off the bars, and the experiment
counts one completion for a batch-invariant sampler and many for the blog's and a shared-generator sampler."""
import math
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from course.bench import learner  # noqa: E402
from course.notebook import bench_figures as bf  # noqa: E402
from course.notebook import experiment_invariance as ei  # noqa: E402
from course.notebook import widgets as cw  # noqa: E402
from course.notebook.demo_samplers import SharedGeneratorSampler  # noqa: E402
from course.problems import ROOT  # noqa: E402

RED = to_rgba("tab:red")


def grid_result(batch, vocab, loop_ms, fast_ms, spread=1.0):
    ms = {"reference": loop_ms, "fast": fast_ms, "floor": 0.01}
    return {"name": "g", "B": batch, "V": vocab, "mix": "seed004", "logits": "peaked", "device": "cpu", "ms": ms,
            "ratio": {m: t / fast_ms for m, t in ms.items()}, "spread": {"reference": 1.0, "fast": spread}}


def test_crossover_is_where_the_speedup_crosses_one():
    assert bf.crossover([(1, 0.5), (2, 2.0), (4, 3.0)]) == pytest.approx(math.sqrt(2))   # halfway in log-log
    assert bf.crossover([(1, 0.25), (4, 1.0)]) == pytest.approx(4)
    assert bf.crossover([(1, 1.5), (2, 3.0)]) is None                                    # wins from B = 1
    assert bf.crossover([(1, 0.2), (2, 0.5)]) == math.inf                                 # never wins


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_crossover_figure_marks_each_vocabularys_crossing_and_draws_noise_hollow(lang):
    results = [grid_result(1, 1024, 0.1, 0.4), grid_result(4, 1024, 0.4, 0.4 / 1.0001),
               grid_result(16, 1024, 1.6, 0.5), grid_result(1, 50257, 2.0, 0.4), grid_result(4, 50257, 8.0, 0.5),
               grid_result(16, 50257, 32.0, 0.8, spread=3.0)]                             # this point is noise
    fig = bf.draw_crossover(results, lang)
    state = fig._p08_state
    assert state["crossover"][50257] is None and state["crossover"][1024] == pytest.approx(4, rel=1e-3)
    assert state["speedups"][(16, 50257)] == pytest.approx(40) and state["noisy"] == [(16, 50257)]
    ax = fig.axes[0]
    marks = [line for line in ax.lines if line.get_marker() == "v"]
    assert len(marks) == 1 and list(marks[0].get_ydata()) == [1] and marks[0].get_xdata()[0] == pytest.approx(4, 1e-3)
    hollow = [line for line in ax.lines if line.get_marker() == "o" and line.get_markerfacecolor() == "white"]
    assert [(line.get_xdata()[0], line.get_ydata()[0]) for line in hollow] == [(16, pytest.approx(40))]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(("B ≈ 4.0" in t) for t in legend) and len(legend) == 2
    assert "1" in ax.get_ylabel() and len(ax.texts) == 0    # what 1 means: in the y label, not over a curve
    fig.canvas.draw()
    assert ax.get_legend().get_window_extent().y1 <= ax.get_window_extent().y0 + 1       # below the axes
    assert cw.missing_glyphs(fig) == []
    assert fig.get_size_inches()[0] * fig.dpi <= 800                                   # readable at 1024 px


def table_result(name, ms, spread=None):
    fast = ms["fast"]
    return {"name": name, "B": 64, "V": 50257, "mix": "seed004", "logits": "peaked", "device": "cpu", "ms": ms,
            "ratio": {m: t / fast for m, t in ms.items()}, "spread": spread or {m: 1.0 for m in ms}}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_bench_chart_has_yours_after_the_fast_path_its_legend_above_the_bars_and_no_red(lang):
    ms = {"reference": 130.0, "full_sort": 210.0, "blog": 3.4, "fast": 2.2, "yours": 2.5, "floor": 1.4}
    results = [table_result("seed 004", ms), table_result("busy", ms, dict({m: 1.0 for m in ms}, blog=4.0))]
    fig = bf.draw_bench(results, lang)
    assert fig._p08_state["methods"] == ["reference", "full_sort", "blog", "fast", "yours", "floor"]
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 12 and not [b for b in bars if to_rgba(b.get_facecolor()) == RED]
    hollow = [i for i, b in enumerate(bars) if b.get_facecolor() == to_rgba("white")]
    assert hollow == [1, 3, 5, 7, 9, 11]                                    # every bar of the noisy case
    fig.canvas.draw()
    legend, axes = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.y0 >= axes.y1 - 1, (legend, axes)                          # above the axes: on no bar
    assert cw.missing_glyphs(fig) == [] and fig.get_size_inches()[0] * fig.dpi <= 800


def test_html_table_marks_noise_and_shows_yours_after_the_fast_path():
    ms = {"reference": 130.0, "full_sort": 210.0, "blog": 3.4, "fast": 2.2, "yours": 2.5, "floor": 1.4}
    noisy = table_result("busy", ms, dict({m: 1.0 for m in ms}, fast=5.0))
    table = cw.results_html([table_result("seed 004", ms), noisy], "en")
    heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th\b[^>]*>(.*?)</th>", table)]
    assert heads[-3:] == ["fast path", "yours (mine/)", "floor amax(-1)"]
    assert "~ busy" in table and "color:#999" in table and "~ grey: noise" in table
    assert cw.losing_cases([noisy]) == []                                   # noise is not explained as design
    assert "No case's figures are speeds" in cw.explain_losses([noisy], "en")
    assert "没有一个场景的数字是速度" in cw.explain_losses([noisy], "zh")


def test_learner_impl_waits_for_mine_and_times_a_file_that_runs(tmp_path):
    stub = cw.choose_fast_impl(False, "en")
    impl, line = bf.learner_impl(stub, "en")
    assert impl is None and line == "mine/p08_sampler_fast.py does not run yet: the course's samplers only"
    copy = tmp_path / "fast_copy.py"
    copy.write_text((ROOT / "solutions" / "p08_sampler_fast.py").read_text(encoding="utf-8"), encoding="utf-8")
    done = cw.choose_fast_impl(False, "zh", mine_path=copy)
    impl, line = bf.learner_impl(done, "zh")
    assert impl[0] == str(copy) and line == f"yours = {copy}（对不对：./check.sh p08-fast --impl {copy}）"


def test_time_cases_drops_a_file_that_fails_on_a_later_case_with_one_line():
    class Narrow:
        def sample(self, logits, req_ids, params, prev_tokens):
            if logits.shape[-1] > 100:
                raise IndexError("index 100 is out of bounds")
            return logits.argmax(-1)

    cases = [("narrow", 2, 64, "seed004", "peaked"), ("wide", 2, 256, "seed004", "peaked"),
             ("wider", 2, 512, "seed004", "peaked")]
    results, lines = bf.time_cases(cases, ("narrow.py", Narrow), methods=("reference", "fast", "floor"), lang="en",
                                   repeat=1, budget_s=0.01)
    assert ["yours" in r["ms"] for r in results] == [True, False, False]
    assert lines[0] == ("yours is timed no further: narrow.py: sample() on wide (B=2, V=256, peaked) raised "
                        "IndexError: index 100 is out of bounds; ./check.sh p08-fast --impl narrow.py shows where")


def test_small_case_line_counts_the_ops_of_the_smallest_case():
    line = bf.small_case_line([grid_result(1, 1024, 0.1, 0.3), grid_result(64, 4096, 20, 1)], "en")
    assert line.startswith("The loop wins small cases: at B = 1, V = 1024 the fast path issues ")
    fast_ops, loop_ops = (int(n) for n in re.search(r"issues (\d+) torch ops .* the loop's (\d+);", line).groups())
    assert fast_ops > loop_ops > 0
    lost = bf.small_case_line([grid_result(1, 1024, 0.5, 0.3), grid_result(64, 4096, 20, 1)], "en")
    noise = bf.small_case_line([grid_result(1, 1024, 0.1, 0.3, spread=3.0), grid_result(64, 4096, 20, 1)], "en")
    assert "wins" not in lost and lost.endswith("the loop was not faster for it this run.")    # never a false claim
    assert "wins" not in noise and noise.endswith("this run's figures for that case are noise.")


# the batch-invariance experiment in miniature ------------------------------------------------------------------
def test_one_completion_for_batch_invariant_samplers_many_for_the_blog_and_a_shared_generator():
    state, threads = torch.random.get_rng_state(), torch.get_num_threads()
    counts = ei.distinct_completions(dict(ei.samplers(), shared=SharedGeneratorSampler), runs=12, tokens=8)
    assert {n: c["distinct"] for n, c in counts.items() if n in ("reference", "fast")} == {"reference": 1, "fast": 1}
    assert counts["reference"]["top"] == 12
    assert counts["blog"]["distinct"] >= 6 and counts["shared"]["distinct"] >= 6, counts
    assert torch.equal(torch.random.get_rng_state(), state) and torch.get_num_threads() == threads


def test_runs_differ_only_by_their_batches():
    """Run r is the same twice (the global RNG is reset per run), and the runs' batches differ."""
    assert ei.completions(ei.BlogSampler, runs=3, tokens=5) == ei.completions(ei.BlogSampler, runs=3, tokens=5)
    peers = [ei.peer_params(__import__("random").Random(s)) for s in range(200)]
    assert all(p.seed != ei.REQUEST.seed for p in peers) and len({p.temperature for p in peers}) > 1


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_distinct_chart_and_summary_say_whose_sampler_ran(lang, tmp_path):
    counts = {"blog": {"distinct": 97, "top": 2, "runs": 100}, "reference": {"distinct": 1, "top": 100, "runs": 100},
              "fast": {"distinct": 1, "top": 100, "runs": 100}}
    fig = ei.draw_distinct(counts, lang)
    ax = fig.axes[0]
    assert [b.get_width() for b in ax.patches] == [97, 1, 1] and fig._p08_state["names"] == list(counts)
    assert not [b for b in ax.patches if to_rgba(b.get_facecolor()) == RED]
    assert cw.missing_glyphs(fig) == [] and fig.get_size_inches()[0] * fig.dpi <= 800
    stub = cw.choose_fast_impl(False, lang)
    text = ei.summary(counts, stub, lang)
    assert "97" in text and ("mine/p08_sampler_fast.py" in text) and ("yours" not in text.lower() or lang == "en")
    assert "yours" not in ei.samplers(stub)
    copy = tmp_path / "fast_copy.py"
    copy.write_text((ROOT / "solutions" / "p08_sampler_fast.py").read_text(encoding="utf-8"), encoding="utf-8")
    assert "yours" in ei.samplers(cw.choose_fast_impl(False, lang, mine_path=copy))
    wrong = dict(counts, yours={"distinct": 40, "top": 5, "runs": 100})
    assert "I1" in ei.summary(wrong, None, lang)


def test_learner_load_restores_torch_state_a_file_changed(tmp_path):
    path = tmp_path / "threads.py"
    path.write_text("import torch\ntorch.set_num_threads(1)\ntorch.set_default_dtype(torch.float64)\n"
                    + (ROOT / "solutions" / "p08_sampler_fast.py").read_text(encoding="utf-8"), encoding="utf-8")
    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()
    learner.load(str(path))
    assert (torch.get_num_threads(), torch.get_default_dtype()) == (threads, dtype)


def test_the_grid_takes_the_tables_points_and_times_the_rest(monkeypatch):
    monkeypatch.setattr(bf, "GRID_B", (1, 64))
    monkeypatch.setattr(bf, "GRID_V", (64,))
    monkeypatch.setattr(bf, "REPEAT", 1)
    table = [dict(grid_result(64, 64, 5.0, 1.0), name="from the table"),
             dict(grid_result(1, 64, 5.0, 1.0), mix="mixed")]                  # another mix: not a grid point
    grid, lines = bf.time_grid(table, "en")
    assert [(r["name"], r["B"], r["V"]) for r in grid] == [("from the table", 64, 64), ("seed 004 mix", 1, 64)]
    assert set(grid[1]["ms"]) == {"reference", "fast", "floor"}


def test_a_noisy_point_does_not_move_the_crossover():
    results = [grid_result(1, 1024, 0.1, 0.4), grid_result(2, 1024, 0.1, 1.0, spread=5.0),
               grid_result(4, 1024, 0.8, 0.4), grid_result(16, 1024, 3.2, 0.4)]
    assert bf.draw_crossover(results, "en")._p08_state["crossover"][1024] == pytest.approx(
        bf.crossover([(1, 0.25), (4, 2.0)]))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_learner_file_with_a_bug_is_not_timed_and_says_why_in_lines_that_fit(lang, tmp_path):
    """mine/ runs (a bug is not a stub) but raises on the probe: no 'yours' column, the reason wrapped to the page."""
    buggy = tmp_path / "buggy_fast.py"
    buggy.write_text((ROOT / "solutions" / "p08_sampler_fast.py").read_text(encoding="utf-8")
                     + "\n\ndef _broken(self, logits, req_ids, params, prev_tokens):\n"
                       "    raise ValueError('the window of row ' + str(len(req_ids)) + ' is empty; ' * 8)\n\n\n"
                       "FastSampler.sample = _broken\n", encoding="utf-8")
    impl, line = bf.learner_impl(cw.choose_fast_impl(False, lang, mine_path=buggy), lang)
    assert impl is None and "ValueError: the window of row 2 is empty" in line.replace("\n", " ")
    parts = line.splitlines()                   # a path longer than the page (pytest's tmp_path) stays whole
    assert len(parts) > 1 and all(len(part) <= 74 or " " not in part.rstrip(":") for part in parts), parts
