"""The panels' titles and legends say what is drawn in the state shown, and sit off the data: the fast path's
window panel (its lower chart is "after top-k" only while top-k is on; a nearly flat row gets decade labels, not
2.75x10^-4 ones that squeeze the plot) and P08's filter panel (no crossing token in the legend when none is drawn:
greedy, or top_p off). Each legend lies outside its axes, so it never covers a curve, a bar or the top_p line."""
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from course.notebook import widgets as cw  # noqa: E402


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def assert_legends_off_the_axes(fig):
    """Every legend above its axes (its bottom at or over the axes' top): on no data."""
    cw.render_png(fig)                                     # the layout as drawn
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            box, axes = legend.get_window_extent(), ax.get_window_extent()
            assert box.y0 >= axes.y1 - 1, (legend_texts(ax), box, axes)


WINDOW_STATES = [  # row, temperature, top_k, top_p, the lower chart's title (en)
    ("peaked", 1.0, 40, 0.9, "cumulative mass after top-k (k = 40)"),
    ("heavy", 1.0, -1, 0.9, "cumulative mass of the whole row (top-k off)"),
    ("flat", 1.0, -1, 1.0, "cumulative mass of the whole row (top-k off)"),
    ("bf16", 0.7, 60, 0.95, "cumulative mass after top-k (k = 60)"),
    ("peaked", 1.0, 300, 0.9, "cumulative mass after top-k (k = 300)"),
    ("flat", 1.0, 1, 0.5, "cumulative mass after top-k (k = 1)"),
]


@pytest.mark.parametrize("row, temperature, top_k, top_p, title", WINDOW_STATES)
def test_window_panel_titles_follow_top_k_and_legends_sit_off_the_data(row, temperature, top_k, top_p, title):
    w, fig = cw.build_window_panel("en")
    w["row"].value, w["temperature"].value, w["top_k"].value, w["top_p"].value = row, temperature, top_k, top_p
    upper, lower = fig.axes
    assert lower.get_title().startswith(title), lower.get_title()
    assert ("after top-k" in lower.get_title()) == (0 < top_k < len(cw.window_rows()[row]))
    shown = legend_texts(lower)
    assert (f"top_p = {top_p:.2f}" in shown) == (top_p < 1)
    assert ("W = " in " ".join(shown)) == (fig._p08_state["width"] is not None)            # a window only if used
    assert_legends_off_the_axes(fig)
    labels = [t.get_text() for t in upper.get_yticklabels() if t.get_text()]
    assert labels and all(re.fullmatch(r"\$\\mathdefault\{10\^\{-?\d+\}\}\$", label) for label in labels), labels


def test_window_panel_in_chinese_says_the_same():
    w, fig = cw.build_window_panel("zh")
    titles = {}
    for top_k in (40, -1):
        w["top_k"].value = top_k
        titles[top_k] = fig.axes[1].get_title()
    if cw.cjk_font():
        assert "top-k（k = 40）之后" in titles[40] and "整行" in titles[-1] and "之后" not in titles[-1]
    else:                                                  # no Chinese font: the figure falls back to English
        assert "after top-k" in titles[40] and "whole row" in titles[-1]


def test_a_flat_rows_plots_line_up_with_short_tick_labels():
    """The flat row's probabilities span less than a decade: the upper axis still runs from one decade to the
    next, so its labels are as short as the lower plot's and the two plots share their left edge."""
    w, fig = cw.build_window_panel("en")
    w["row"].value, w["top_k"].value = "flat", -1
    upper, lower = fig.axes
    low, high = upper.get_ylim()
    assert low > 0 and high / low >= 10 and all(round(v, 9) in (1e-5, 1e-4, 1e-3, 1e-2) for v in (low, high))
    assert abs(upper.get_position().x0 - lower.get_position().x0) < 1e-6


@pytest.mark.parametrize("changes, crossing", [({}, True), ({"temperature": 0.0}, False), ({"top_p": 1.0}, False),
                                               ({"row": "flat", "top_k": -1, "top_p": 0.3}, True)])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_filter_panel_legend_lists_only_what_is_drawn_and_sits_off_the_data(changes, crossing, lang):
    w, fig = cw.build_ui(lang=lang, use_reference=True)
    for name, value in changes.items():
        w[name].value = value
    cumulative = fig.axes[1]
    shown = legend_texts(cumulative)
    token = cw.fig_text(lang, "越过阈值的 token（保留）", "crossing token (stays)")
    assert (token in shown) == crossing == bool(list(fig._p08_artists["crossing"].get_xdata())), shown
    assert any(text.startswith("top_p = ") for text in shown) == fig._p08_artists["top_p"].get_visible()
    assert_legends_off_the_axes(fig)
