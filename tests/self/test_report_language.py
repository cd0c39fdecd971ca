"""A Chinese grade is in Chinese: the failure part of a --lang zh report holds almost no English prose (numbers, ids,
code and the names of the course's terms stay as they are), and its lists of names are joined with "、"."""
import re

import pytest

from tests.self import mutants
from tests.self.helpers import mutate
from tests.self.test_report_causes import by_name, report_of

MAX_ENGLISH_SHARE = 0.03

# Terms the Chinese text keeps in English on purpose (as the hints and the notebook write them): they are not prose.
TERMS = {"token", "tokens", "seed", "seeds", "batch", "greedy", "penalty", "top", "generator", "generators", "logits",
         "softmax", "argmax", "sampler", "multinomial", "dtype", "tensor", "torch", "nucleus", "epsilon", "route",
         "window", "inf", "nan", "id", "ids", "free", "sample", "cumsum"}
_WORD = re.compile(r"^[A-Za-z][a-z]*(?:'[a-z]+)?$")


def english_words(token: str) -> bool:
    """Is this whitespace-separated token an English word of prose (not a number, an identifier, code or a term)?
    Light punctuation around it is ignored; CamelCase (LongTensor), snake_case, dotted names, calls and anything with
    a digit or an operator are code."""
    word = token.strip("([{\"'“”‘’").rstrip(",.;:!?)]}\"'“”‘’")
    return bool(_WORD.match(word)) and word.lower() not in TERMS and not (len(word) == 1 and word not in "aI")


def is_english_prose(line: str) -> bool:
    """A line is English prose when, outside code, it holds at least 3 English words in a row. Code is: a `backtick`
    span, a quoted string ('q', "..."), and the message of an exception the learner's code raised (after
    "抛出 SomeError:"), which is the learner's or torch's own text."""
    text = re.sub(r"`[^`]*`", " ", line)
    text = re.sub(r"抛出 \w+: .*", " ", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", " ", text)
    run = 0
    for token in text.split():
        run = run + 1 if english_words(token) else 0
        if run >= 3:
            return True
    return False


def test_the_heuristic_tells_prose_from_code():
    assert is_english_prose("      the stream never moves")
    assert is_english_prose("      q (seed=7) alone: [0, 5]; mixed: [0, 0]; first difference at step 1, batch ['b']")
    assert not is_english_prose("      called apply_top_p([-0.6931, -1.386], top_p=0.7) -> kept {0}, expected {0, 1}")
    assert not is_english_prose("      位置 mine/p08_sampler.py:36")
    assert not is_english_prose("      apply_repetition_penalty 抛出 IndexError: tensors used as indices must be long")
    assert not is_english_prose("      每一步都抽到同一个 token：`if not seed` 把它当成了没有 seed")


# buggy files of every kind: pieces, the order of the steps, streams, batches, the output, a crash
ZH_FILES = ["drop_crossing_token", "new_generator_every_step", "one_generator_for_batch", "global_rng_seen_alone",
            "seed_zero_is_unseeded", "temperature_floored", "column_output", "divide_before_greedy",
            "free_keeps_generator", "temperature_after_filters", "empty_history_crash_seen_by_e2_off", "penalty_twice",
            "history_ignored", "batch_max_top_k_seen_by_i6"]
DEFAULT = {"one_generator_for_batch", "new_generator_every_step", "column_output", "free_keeps_generator",
           "empty_history_crash_seen_by_e2_off"}                                  # the others: -m slow (a grade each)


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in DEFAULT else pytest.mark.slow) for n in ZH_FILES])
def test_a_chinese_grade_holds_almost_no_english_prose(name, tmp_path):
    """Per file the share of English-prose failure lines stays under 3 %; a share over it names the lines."""
    lines, last = report_of("p08", mutate("p08", by_name(mutants.P08, name)[0], tmp_path), lang="zh")
    english = [line for line in lines + [last] if is_english_prose(line)]
    assert len(english) <= MAX_ENGLISH_SHARE * len(lines + [last]), "\n".join(english)
    assert ", " not in "".join(line.split("：", 1)[-1] for line in lines if "项检查没通过" in line)


def test_the_chinese_summary_joins_names_with_the_enumeration_comma():
    from course.grader import report
    assert report.summary(1, 3, ["E1 甲", "E2 乙"], "zh", False)[0] == "未通过：E1 甲、E2 乙"
    assert report.summary(1, 3, ["E1 a", "E2 b"], "en", False)[0] == "failed: E1 a, E2 b"
