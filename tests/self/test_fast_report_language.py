"""A Chinese grade of p08-fast reads in Chinese: the evidence lines its own checks print (what was called, what came
back, the peers a row was tried among) are translated like the explanations, not left as English prose. Code,
numbers, ids and call shapes stay as they are."""
import re

from tests.self.helpers import check_ids, mutate, run
from tests.self.mutants_fast import P08_FAST
from tests.self.mutants_fast_probes import PROBES
from tests.self.mutants_fast_steps import FAST_STEPS

# one buggy file per aim (together they fail every check listed in AIMED); each is graded on all of p08-fast's own
# checks but F5 (speed), so every line those checks print for it is counted
MUTANTS = ["window_ids_off_by_chunk", "window_blog_crossing_token", "blog_clamp_min_floor", "blog_global_rng",
           "sample_draws_from_a_short_window", "complete_when_the_window_is_the_row", "row_mass_by_torch_sum",
           "filtered_probs_draws_from_the_streams"]
AIMED = {"F1", "F2", "F3", "F4", "F6", "F7", "F8", "F9", "T2.window_topk", "T4.filter_window"}
CODE = [r"`[^`]*`",                                                    # a backtick span
        r"called [\w.]+\(",                                            # a call shape, to its closing parenthesis
        r"\b\w+(?:[._]\w+)+(?:\(\))?",                                 # identifiers with an underscore or a dot
        r"\[[^\[\]]*\]",                                               # bracketed lists (innermost first)
        r"[-+]?\d[\w.+-]*"]                                            # numbers (1e-6, 0.9, 50257, 3x)
GAP = r"[^A-Za-z\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+"               # spaces, ASCII punctuation: not CJK
ENGLISH = re.compile(rf"(?<![A-Za-z])[A-Za-z]+(?:{GAP}[A-Za-z]+){{2}}(?![A-Za-z])")   # 3 words in a row


def without_code(line: str) -> str:
    """The line with its code taken out: what is left is prose (or symbols)."""
    line = re.sub(CODE[0], " ", line)
    while (m := re.search(CODE[1], line)):                             # cut to the matching parenthesis
        depth, end = 1, m.end()
        while end < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[end], 0)
            end += 1
        line = line[:m.start()] + " " + line[end:]
    line = re.sub(CODE[2], " ", line)
    while re.search(CODE[3], line):
        line = re.sub(CODE[3], " ", line)
    return re.sub(CODE[4], " ", line)


def is_english(line: str) -> bool:
    return ENGLISH.search(without_code(line)) is not None


def test_the_prose_checker_tells_code_from_prose():
    assert not is_english("called FastSampler.filtered_probs(logits [4, 64] float32, params: top_k=3) -> 0.25")
    assert not is_english("请求（top_k=40, top_p=0.9, seed=1），V=8237：单独 -> [3, 5]，在 peers 中的位置 2 -> [3, 6]")
    assert is_english("row (top_k=3) alone vs at position 3 among peers with a larger top_k")
    assert not is_english("`torch.sum(e, dim=-1)` is window_topk")


def test_a_chinese_grade_of_p08_fast_reads_in_chinese(tmp_path):
    mutants = {m.name: m for m in P08_FAST + FAST_STEPS + PROBES}
    ids = [i for i in check_ids("p08-fast") if i[0] in "TF" and i != "F5"]
    lines, failed_ids = [], set()
    for name in MUTANTS:
        results = run("p08-fast", mutate("p08-fast", mutants[name], tmp_path), ids, lang="zh")
        failed = [r for r in results.values() if r.status in ("fail", "error")]
        failed_ids |= {r.id for r in failed}
        lines += [f"{name} {r.id}: {line}" for r in failed for entry in r.lines for line in entry.split("\n")]
    assert AIMED <= failed_ids, f"no file failed {sorted(AIMED - failed_ids)}: pick mutants that do"
    english = [line for line in lines if is_english(line.split(": ", 1)[1])]
    assert len(english) < 0.03 * len(lines), (f"{len(english)} of {len(lines)} failure lines are English prose:\n"
                                               + "\n".join(english))


def test_a_call_line_begins_with_its_chinese_verb_in_a_chinese_report():
    """The fast path's checks write their evidence as `called f(...) -> ...` in both languages; the report prints
    调用 in Chinese, the line unchanged in English."""
    from types import SimpleNamespace

    from course.grader.report import failure_block
    line = "called row_total(e[2:3]) [1, 50257] -> 23.5668488"
    result = SimpleNamespace(status="fail", lines=[line, "called it twice"], where=None, hint=None,
                             output_text="", traceback="")
    zh, en = (failure_block(result, None, lang, verbose=False) for lang in ("zh", "en"))
    assert zh[:2] == ["调用 row_total(e[2:3]) [1, 50257] -> 23.5668488", "调用 it twice"], zh
    assert en[:2] == [line, "called it twice"], en
