"""Printed lines in the notebook's language, short enough for the page.

A notebook's code cells are shared by its Chinese and English versions; its first cell sets LANG and
`t = cw.in_language(LANG)`, and every printed line goes through t(zh, en). Numbers and code identifiers are the
same in both. At a 1024 px window JupyterLab's output area holds LINE_COLUMNS columns of its monospace font (a
Chinese character takes two); wrap() breaks a longer line there instead of letting it scroll sideways.

Columns of printed labels line up by display width, not by a count of columns: in a browser a Chinese character
is drawn by a fallback font, about 1.7 of the monospace font's columns wide rather than two. So pad() fills a
Chinese label with ideographic spaces (U+3000, exactly as wide as a Chinese character in any font) and a Latin one
with spaces, and pad_all() gives a column of mixed labels the same number of wide and of narrow characters each:
they line up in a browser, in a terminal and in any monospace font.
"""
import unicodedata

from course.lang import pick

LINE_COLUMNS = 74          # 592 px of output at 13 px monospace (7.8 px a column, 15.6 a Chinese character)


def in_language(lang):
    """t(zh, en) -> the text for lang: `t = cw.in_language(LANG)` in a notebook's first cell."""
    def t(zh, en):
        return pick(lang, zh, en)
    return t


def columns(text: str) -> int:
    """The width of text in monospace columns: a wide (Chinese, full-width) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


IDEOGRAPHIC_SPACE = "\u3000"      # as wide as a Chinese character in every font (two columns in a terminal)


def _wide(text: str) -> int:
    return sum(unicodedata.east_asian_width(ch) in "WF" for ch in text)


def pad(text: str, width: int) -> str:
    """text padded to `width` columns so that the labels of one column line up as drawn: a label with a Chinese
    character is filled with ideographic spaces (and one space for an odd column), a Latin one with spaces. Labels
    that mix the two in one column: pad_all()."""
    missing = max(0, width - columns(text))
    if not _wide(text):
        return text + " " * missing
    return text + " " * (missing % 2) + IDEOGRAPHIC_SPACE * (missing // 2)


def pad_all(labels) -> list:
    """The labels of one column, each padded to as many wide (Chinese) and as many narrow characters as the
    others: they line up whatever width a font gives a Chinese character."""
    labels = list(labels)
    wide = max((_wide(label) for label in labels), default=0)
    narrow = max((len(label) - _wide(label) for label in labels), default=0)
    return [label + " " * (narrow - len(label) + _wide(label)) + IDEOGRAPHIC_SPACE * (wide - _wide(label))
            for label in labels]                  # spaces first: no ideographic space right after a "）"


def wrap(text: str, width: int = LINE_COLUMNS, indent: str = "  ", break_long: bool = True) -> str:
    """Each line of text broken to at most `width` columns: at the last space, or after a Chinese character or
    punctuation mark, before the limit; the continuation lines are indented. A word longer than the width (a long
    path) is broken at the limit, or with break_long=False kept whole on a line of its own."""
    out = []
    for line in text.split("\n"):
        while columns(line) > width:
            cut, used, lead = 0, 0, len(line) - len(line.lstrip(" "))
            for i, ch in enumerate(line):
                used += columns(ch)
                if used > width:
                    break
                if (ch == " " or columns(ch) == 2) and i >= lead:      # (a cut in the indent would loop forever)
                    cut = i + 1
            if not cut and not break_long:                       # the word's end: the first break after the limit
                cut = next((j + 1 for j in range(i, len(line)) if line[j] == " " or columns(line[j]) == 2), len(line))
                if cut == len(line):
                    break
            cut = cut or i
            out.append(line[:cut].rstrip())
            line = indent + line[cut:].lstrip()
        out.append(line)
    return "\n".join(out)
