"""Figures use the learner's language when a Chinese font is installed, English otherwise, and never draw
missing-glyph boxes; the intuition figure's text is readable."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

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


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_no_missing_glyphs_and_labels_in_the_right_language(lang):
    for fig in figures(lang):
        assert cw.missing_glyphs(fig) == []
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        chinese = any("\u4e00" <= ch <= "\u9fff" for t in texts for ch in t)
        assert chinese == (lang == "zh" and cw.cjk_font() is not None), (lang, cw.cjk_font())


def test_fig_text_falls_back_to_english_without_a_chinese_font(monkeypatch):
    monkeypatch.setattr("course.notebook.plotting.cjk_font", lambda: None)
    assert cw.fig_text("zh", "概率", "probability") == "probability"
    assert cw.fig_text("en", "概率", "probability") == "probability"


def test_intuition_figure_text_is_readable():
    fig, steps = cw.talent_show_figure(cw.choose_impl(True)[0], "en")
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert min(sizes) >= 10 and fig.get_size_inches()[0] <= 12
    assert fig._p08_state["shared"] == [1, 4] and fig._p08_state["own"] == [0, 1]
    assert steps["kept"] == [0, 2]


def test_rounded_prints_short_floats():
    assert cw.rounded(torch.tensor([-0.2, 1 / 3])) == [-0.2, 0.3333]
    assert cw.rounded([[0.1 + 0.2]], 3) == [[0.3]]
