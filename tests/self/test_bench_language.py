"""The Chinese fast-path notebook's benchmark speaks Chinese: case names, logits shapes, the chart's labels and the
sentences under it (numbers, ids and code stay as they are); the English notebook keeps its English. The table's
heads break only between their parts, never inside a word."""
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from course import bench  # noqa: E402
from course.problems import ROOT  # noqa: E402
from course.notebook import bench_figures as bf  # noqa: E402
from course.notebook import prose  # noqa: E402
from course.notebook.text import LINE_COLUMNS  # noqa: E402
from course.notebook import widgets as cw  # noqa: E402
from course.notebook.bench_view import LABELS  # noqa: E402
from course.lang import pick  # noqa: E402

ENGLISH_CASE_WORDS = ("sweep", "heterogeneous", "peaked", "heavy", "flat", "only", "mix", "big")


def result(name, batch, vocab, logits, ms):
    fast = ms["fast"]
    return {"name": name, "B": batch, "V": vocab, "mix": "mixed", "logits": logits, "device": "cpu", "ms": ms,
            "ratio": {m: t / fast for m, t in ms.items()}, "spread": {m: 1.0 for m in ms}}


RESULTS = [result("V sweep", 64, 4096, "peaked", {"reference": 12.0, "full_sort": 13.0, "blog": 0.6, "fast": 1.2,
                                                  "yours": 1.3, "floor": 0.15}),
           result("heterogeneous", 8, 4096, "flat", {"reference": 1.0, "full_sort": 3.0, "blog": 0.4, "fast": 1.5,
                                                     "yours": 1.6, "floor": 0.04})]


def table_parts(table):
    heads = re.findall(r"<th\b[^>]*>(.*?)</th>", table)
    rows = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1])]
    return heads, rows


def test_every_case_the_benchmark_or_the_notebook_times_has_a_chinese_name():
    names = {case[0] for cases in (bench.CASES, bench.QUICK_CASES, bf.TABLE_CASES, bf.grid_cases()) for case in cases}
    assert names <= set(bench.CASE_NAMES_ZH), names - set(bench.CASE_NAMES_ZH)
    shapes = {case[4] for cases in (bench.CASES, bench.QUICK_CASES, bf.TABLE_CASES) for case in cases}
    assert shapes <= set(bench.LOGITS_ZH)
    for name in names:
        zh = bench.case_name(name, "zh")                   # Chinese, or only ids and numbers ('seed 004：k40 p.9')
        assert prose.CJK.search(zh) or not prose.english_words(zh), zh
        assert bench.case_name(name, "en") == name


def test_the_chinese_table_names_cases_and_logits_in_chinese_and_the_english_one_in_english():
    heads, rows = table_parts(cw.results_html(RESULTS, "zh"))
    assert [row[:3] for row in rows] == [["V 扫描", "64×4096", "尖峰"], ["异构 batch", "8×4096", "平坦"]]
    assert "参考解" in heads[3] and "你的" in "".join(heads) and "快速路径" in "".join(heads)
    heads, rows = table_parts(cw.results_html(RESULTS, "en"))
    assert [row[:3] for row in rows] == [["V sweep", "64×4096", "peaked"], ["heterogeneous", "8×4096", "flat"]]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_table_heads_break_only_between_their_parts(lang):
    """Every head is its parts, each unbreakable (white-space:nowrap), with a break allowed only between them (a
    space, or <wbr> between two Chinese parts): a narrow page never splits 参考解逐行循环 inside a word, nor
    max(-1). Joined, a head reads as the method's label; the cells never wrap at all."""
    table = cw.results_html(RESULTS, lang)
    heads = re.findall(r"<th\b[^>]*>(.*?)</th>", table)
    part = r"<span style='white-space:nowrap'>[^<]+</span>"
    assert len(heads) == 3 + 6
    for head in heads:
        assert re.fullmatch(f"{part}(?:(?:<wbr>| ){part})*", head), head
    # 参考解|逐行循环, 全词表|排序, 博客写法|（有 bug）
    assert sum("<wbr>" in head for head in heads) == (3 if lang == "zh" else 0)
    texts = [re.sub(r"<[^>]+>", "", head) for head in heads]
    labels = [pick(lang, *LABELS[m]) for m in ("reference", "full_sort", "blog", "fast", "yours", "floor")]
    assert texts == [pick(lang, "场景", "case"), "B×V", "logits"] + labels
    assert all("white-space:nowrap" in c for c in re.findall(r"<td style='([^']*)'>", table))


def test_the_sentences_under_the_chart_name_the_cases_in_the_notebooks_language():
    zh, en = cw.explain_losses(RESULTS, "zh"), cw.explain_losses(RESULTS, "en")
    assert "V 扫描（B=64，V=4096，尖峰）" in zh and "异构 batch（B=8，V=4096，平坦）" in zh
    assert not any(word in zh for word in ENGLISH_CASE_WORDS), zh
    assert "V sweep (B=64, V=4096, peaked)" in en and "heterogeneous (B=8, V=4096, flat)" in en
    assert not prose.is_english_prose(zh)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_charts_case_labels_are_in_the_notebooks_language(lang, monkeypatch):
    """With a Chinese font (CI installs one) the Chinese chart names its cases in Chinese; numbers stay."""
    monkeypatch.setattr("course.notebook.plotting.cjk_font", lambda: "Noto Sans CJK SC")
    fig = bf.draw_bench(RESULTS, lang)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    expected = ["V 扫描", "异构 batch"] if lang == "zh" else ["V sweep", "heterogeneous"]
    assert labels == [f"{expected[0]}\nB=64\nV=4096", f"{expected[1]}\nB=8\nV=4096"]


def test_a_learner_file_that_cannot_be_timed_is_said_in_the_notebooks_language(tmp_path):
    """The lines under the benchmark when mine/ cannot be timed: Chinese in the Chinese notebook (the file's own
    error, paths and commands as they are), each printed line within the page's 74 columns."""
    class Narrow:
        def sample(self, logits, req_ids, params, prev_tokens):
            if logits.shape[-1] > 100:
                raise IndexError("index 100 is out of bounds")
            return logits.argmax(-1)

    cases = [("seed 004: k40 p.9", 2, 64, "seed004", "peaked"), ("V sweep", 2, 256, "seed004", "heavy")]
    lines = {lang: bf.time_cases(cases, ("narrow.py", Narrow), methods=("reference", "fast", "floor"), lang=lang,
                                 repeat=1, budget_s=0.01)[1][0] for lang in ("zh", "en")}
    assert lines["zh"] == ("不再计时你的文件：narrow.py：在 V 扫描（B=2，V=256，长尾）上调用 sample() 时抛出 "
                           "IndexError: index 100 is out of bounds；./check.sh p08-fast --impl narrow.py 会指出在哪里")
    assert lines["en"] == ("yours is timed no further: narrow.py: sample() on V sweep (B=2, V=256, heavy) raised "
                           "IndexError: index 100 is out of bounds; ./check.sh p08-fast --impl narrow.py shows where")
    nameless = tmp_path / "no_class.py"
    nameless.write_text("import torch\n", encoding="utf-8")
    for lang, says in (("zh", "没有 FastSampler 类（基准测试计时的是 FastSampler().sample）"),
                       ("en", "has no FastSampler class (the benchmark times FastSampler().sample)")):
        fast = cw.choose_fast_impl(False, lang, mine_path=ROOT / "solutions" / "p08_sampler_fast.py")
        fast.mine_path = str(nameless)                   # the steps ran; the file the benchmark loads has no class
        impl, line = bf.learner_impl(fast, lang)
        assert impl is None and says in line.replace("\n", ""), line
        assert all(cw.columns(part) <= LINE_COLUMNS or " " not in part for part in line.splitlines()), line
        assert not prose.is_english_prose(line.splitlines()[0]) or lang == "en"


def test_wrap_keeps_a_word_longer_than_the_page_whole_when_asked():
    from course.notebook import text
    path = "/tmp/" + "x" * 90 + ".py"
    line = f"不计时你的文件：{path}：没有 FastSampler 类"
    assert text.wrap(line, 40, indent="", break_long=False).split("\n") == \
        ["不计时你的文件：", f"{path}：", "没有 FastSampler 类"]
    assert all(text.columns(part) <= 40 for part in text.wrap(line, 40, indent="").split("\n"))     # the default


# the notes under the benchmark: full sentences, one paragraph per finding, in both languages ------------------
def is_full_sentences(paragraph, lang) -> bool:
    """Begins as a sentence does (not with a lowercase word) and ends with a full stop of its language."""
    return bool(paragraph) and not paragraph[0].islower() and paragraph.endswith("。" if lang == "zh" else ".")


LOSSES = [result("V sweep", 64, 4096, "peaked", {"reference": 12.0, "full_sort": 13.0, "blog": 0.6, "fast": 1.2,
                                                 "floor": 0.15}),
          result("heterogeneous", 8, 4096, "peaked", {"reference": 1.0, "full_sort": 3.0, "blog": 0.4, "fast": 1.5,
                                                      "floor": 0.04}),
          dict(result("top-p only p.9", 64, 50257, "flat", {"reference": 300.0, "full_sort": 30.0, "blog": 200.0,
                                                            "fast": 40.0, "floor": 3.0}), mix="top_p_only"),
          result("V sweep", 64, 151936, "peaked", {"reference": 2.0, "full_sort": 900.0, "blog": 9.0, "fast": 4.0,
                                                   "floor": 1.0})]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_findings_are_full_sentences_one_paragraph_per_sampler(lang):
    """Each sampler that beat the fast path gets its own paragraph naming every case, with the design's reason where
    it predicts the loss (the loop on a small batch, the full sort on a flat or top-p-only batch, the blog always)
    and no invented reason where it does not (the loop on a large V)."""
    paragraphs = cw.explain_losses(LOSSES, lang).split("\n\n")
    assert len(paragraphs) == 4 and all(is_full_sentences(p, lang) for p in paragraphs), paragraphs
    subjects = [pick(lang, "参考解的逐行循环", "The reference loop")] * 2 + [
        pick(lang, "全词表排序", "The full sort"), pick(lang, "博客的写法（有 bug）", "The blog's code (buggy)")]
    assert [p.startswith(s) for p, s in zip(paragraphs, subjects)] == [True] * 4, paragraphs
    small, large, full_sort, blog = paragraphs
    assert "V=4096" in small and "V=151936" not in small and pick(lang, "batch 和词表都小", "small batch") in small
    assert "V=151936" in large and pick(lang, "没有预料到", "does not predict") in large
    assert pick(lang, "窗口不 certain", "the window is not certain") in full_sort
    assert pick(lang, "和", " and ") in blog and pick(lang, "它是错的", "because it is wrong") in blog
    if lang == "en":
        assert "; " not in blog.split(". ")[0]                          # cases listed in a sentence, not run together


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_note_under_the_benchmark_is_full_sentences(lang):
    from course.bench import learner, machine
    noisy = dict(LOSSES[0], spread={"reference": 3.0})
    notes = [cw.explain_losses(LOSSES[:1], lang), cw.explain_losses([], lang), cw.explain_losses([noisy], lang),
             cw.explain_losses([noisy, LOSSES[3]], lang),
             machine.verdict(LOSSES, machine.Load(0.1, 1.0, 2), lang), machine.verdict([noisy], None, lang),
             learner.printed_note([dict(LOSSES[0], printed=12)], lang),
             bf.small_case_line([dict(LOSSES[1], B=1, V=1024)], lang)]
    for note in notes:
        for paragraph in note.split("\n\n"):
            assert is_full_sentences(paragraph, lang), paragraph
