"""Printed labels line up as drawn, not as counted: in a browser a Chinese character is about 1.7 columns of the
monospace font wide, in a terminal two. cw.pad fills a Chinese label with ideographic spaces (as wide as a Chinese
character in any font) and pad_all gives a column of mixed labels the same number of wide and of narrow
characters, so the column starts in one place whatever the ratio (the browser test measures it on the page)."""
import unicodedata

import pytest

from course.notebook import text


def drawn_width(label, wide_columns):
    """The label's width when a wide character is drawn `wide_columns` columns wide."""
    return sum(wide_columns if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in label)


RATIOS = (1.5, 13 / 7.8, 2.0)         # a CJK fallback font's glyph over a monospace column: browser ... terminal


@pytest.mark.parametrize("labels, width", [(("单独", "在同伴旁"), 16), (("单独", "混合"), 6),
                                           (("博客", "快速路径", "应为"), 8), (("次数", "期望概率"), 8),
                                           (("输入", "输出", "应为"), 9)])
def test_pad_lines_up_a_column_of_chinese_labels_in_any_font(labels, width):
    padded = [text.pad(label, width) for label in labels]
    assert all(text.columns(p) == width for p in padded), padded                  # a terminal's columns: as asked
    for ratio in RATIOS:
        assert len({round(drawn_width(p, ratio), 6) for p in padded}) == 1, (ratio, padded)
    assert all(p.rstrip() == label for p, label in zip(padded, labels))


def test_pad_fills_a_latin_label_with_spaces_only():
    assert text.pad("alone", 8) == "alone   " and text.pad("beside the peer", 16) == "beside the peer "
    assert text.pad("too long for it", 4) == "too long for it"


@pytest.mark.parametrize("labels", [
    ("排序下标", "概率", "cumsum", "之前的质量", "删掉 >= 0.6", "最后的概率", "应为"),
    ("删 cumsum > top_p（错）", "删 mass_before >= top_p", "参考解"),
    ("torch.sort（全词表）", "torch.topk (k = 40)", "logits.amax(-1)（下限）"),
])
def test_pad_all_lines_up_a_column_that_mixes_chinese_and_latin_labels(labels):
    padded = text.pad_all(labels)
    for ratio in RATIOS:
        assert len({round(drawn_width(p, ratio), 6) for p in padded}) == 1, (ratio, padded)
    assert [p.rstrip() for p in padded] == list(labels)
    one_by_one = [text.pad(label, max(map(text.columns, labels))) for label in labels]
    assert len({round(drawn_width(p, RATIOS[1]), 6) for p in one_by_one}) > 1        # what pad alone cannot do


def test_pad_all_of_latin_labels_is_plain_spaces():
    assert text.pad_all(["order", "probs", "mass before"]) == ["order      ", "probs      ", "mass before"]
    assert text.pad_all([]) == []
