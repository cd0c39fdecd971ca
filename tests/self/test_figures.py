"""Figures use the learner's language when a Chinese font is installed, English otherwise, and never draw
missing-glyph boxes; every figure fits JupyterLab's output area at a 1024 px window, so its text keeps its size
there; legends never sit on what they explain."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from course.notebook import plotting  # noqa: E402
from course.notebook import widgets as cw  # noqa: E402
from course.sampling_params import SamplingParams  # noqa: E402


def figures(lang):
    reference, _ = cw.choose_impl(True)
    yield cw.talent_show_figure(reference, lang)[0]
    yield cw.build_ui(lang, True)[1]
    yield cw.build_invariance_panel(lang, True, steps=4, mixes=1)[1]
    yield cw.empirical_histogram(reference, torch.log(torch.tensor(cw.WORKED_PROBS)), SamplingParams(seed=1),
                                 draws=200, lang=lang)[0]
    yield cw.build_window_panel(lang)[1]
    yield cw.draw_buckets(cw.bucket_select(cw.window_rows()["heavy"], 0.9), lang)


def test_fig_text_falls_back_to_english_without_a_chinese_font(monkeypatch):
    monkeypatch.setattr("course.notebook.plotting.cjk_font", lambda: None)
    assert cw.fig_text("zh", "概率", "probability") == "probability"
    assert cw.fig_text("en", "概率", "probability") == "probability"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_figure_speaks_its_language_without_missing_glyphs_and_fits_the_page_at_1024_px(lang):
    """Each figure: no missing-glyph box, Chinese labels exactly when the language is zh and a Chinese font is
    installed. JupyterLab shrinks an image wider than its output area (592 px at a 1024 px window), text and all:
    every figure is at most that wide (so shown 1:1), and every text in it is at least MIN_FONT_PX on screen."""
    for fig in figures(lang):
        png, missing = plotting.render_png_and_missing_glyphs(fig)       # drawn once: its tick labels now exist
        assert missing == []
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        chinese = any("\u4e00" <= ch <= "\u9fff" for t in texts for ch in t)
        assert chinese == (lang == "zh" and cw.cjk_font() is not None), (lang, cw.cjk_font())
        width, height = (fig.get_size_inches() * fig.dpi).round()
        assert width <= plotting.OUTPUT_PX - 20, (fig.axes[0].get_title(), width)   # inline: tight box + 20 px
        small = [(t.get_text(), round(plotting.screen_font_px(fig, t), 1)) for t in fig.findobj(matplotlib.text.Text)
                 if t.get_text() and t.get_visible() and plotting.screen_font_px(fig, t) < plotting.MIN_FONT_PX]
        assert not small, small
        assert int.from_bytes(png[16:20], "big") == width                  # the panel's PNG: the same pixels


def boxes(fig, artists):
    return [a.get_window_extent() for a in artists]


def covered(legend, artists, fig):
    """The artists whose drawn box overlaps the legend's box (by more than 2 px each way)."""
    box = legend.get_window_extent()
    return [b for b in boxes(fig, artists) if b.width and b.height and min(box.x1, b.x1) - max(box.x0, b.x0) > 2
            and min(box.y1, b.y1) - max(box.y0, b.y0) > 2]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_legends_never_cover_the_bars(lang):
    """The filter panel (every preset row and a one-token kept set), the bucket figure and the window panel (a flat
    row, which fills its axes) draw their legends above the plot, never on a bar."""
    w, fig = cw.build_ui(lang, True)
    for changes in ({}, {"row": "zipf", "top_k": -1, "top_p": 0.8}, {"row": "flat", "top_k": 1},
                    {"row": "custom", "custom": "5, 0.1, 0.2, 4.9"}):
        for name, value in changes.items():
            w[name].value = value
        fig.canvas.draw()
        bars = [*fig._p08_artists["before"], *fig._p08_artists["after"], *fig._p08_artists["removed"]]
        assert not covered(fig.axes[0].get_legend(), bars, fig), changes
    buckets = cw.draw_buckets(cw.bucket_select(cw.window_rows()["heavy"], 0.9), lang)
    buckets.canvas.draw()
    assert not covered(buckets.axes[0].get_legend(), buckets._p08_artists["bars"], buckets)
    window, wfig = cw.build_window_panel(lang)
    for row in ("flat", "peaked"):
        window["row"].value = row
        wfig.canvas.draw()
        assert not covered(wfig.axes[0].get_legend(), wfig.axes[0].patches, wfig), row


def test_intuition_figure_labels_its_axes_and_its_dice():
    fig, steps = cw.talent_show_figure(cw.choose_impl(True)[0], "en")
    stages = [ax for ax in fig.axes if ax.axison]
    assert len(stages) == 4 and all(ax.get_ylabel() for ax in stages)
    assert [ax.get_xlabel() for ax in stages[2:]] == ["token id", "token id"]
    legends = [t.get_text() for sub in fig.subfigs for legend in sub.legends for t in legend.get_texts()]
    assert legends == ["q's draws", "someone else's, or unused"]
    assert fig._p08_state["shared"] == [1, 4] and fig._p08_state["own"] == [0, 1]
    assert steps["kept"] == [0, 2]


def test_histogram_names_its_axes_and_says_what_off_means():
    reference, _ = cw.choose_impl(True)
    for lang, words in (("en", "tokens off by more than 6 standard deviations: none"),
                        ("zh", "偏离超过 6 个标准差的 token：没有")):
        fig = cw.empirical_histogram(reference, torch.log(torch.tensor(cw.WORKED_PROBS)),
                                     SamplingParams(top_k=3, seed=1), draws=300, lang=lang)[0]
        ax = fig.axes[0]
        assert ax.get_ylabel() and ax.get_xlabel() == "token id"
        assert ax.get_title() == words or cw.cjk_font() is None


def test_rounded_prints_short_floats():
    assert cw.rounded(torch.tensor([-0.2, 1 / 3])) == [-0.2, 0.3333]
    assert cw.rounded([[0.1 + 0.2]], 3) == [[0.3]]
