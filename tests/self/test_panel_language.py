"""The notebooks' panels speak the notebook's language: the window panel's top_k label, and a mistyped entry in the
filter panel's text boxes, said in one line that names what was wrong (no Python error), the last picture kept."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from course.notebook import widgets as cw  # noqa: E402


def test_the_window_panels_top_k_label_is_in_the_panels_language():
    zh, _ = cw.build_window_panel("zh", use_reference=True)
    en, _ = cw.build_window_panel("en", use_reference=True)
    assert zh["top_k"].description == "top_k (-1 关)" and en["top_k"].description == "top_k (-1 off)"


@pytest.mark.parametrize("lang, typed, says", [
    ("zh", ("custom", "2.0, abc, 1"), "自定义 logits：“abc” 不是有限的数（例如 2.0, -0.5, 1e-3，用逗号分隔）"),
    ("en", ("custom", "2.0, abc, 1"), "your own logits: 'abc' is not a finite number (e.g. 2.0, -0.5, 1e-3, "
                                      "comma-separated)"),
    ("zh", ("custom", "2.0, inf"), "自定义 logits：“inf” 不是有限的数"),
    ("en", ("custom", "3"), "your own logits: give at least 2 (comma-separated)"),
    ("zh", ("prev_tokens", "0, 1.5"), "历史 token：“1.5” 不是整数 token id（例如 0, 3，用逗号分隔）"),
    ("en", ("prev_tokens", "x"), "prev tokens: 'x' is not a whole-number token id (e.g. 0, 3, comma-separated)"),
])
def test_a_mistyped_entry_is_one_line_in_the_panels_language_and_keeps_the_picture(lang, typed, says):
    w, fig = cw.build_ui(lang=lang, use_reference=True)
    w["row"].value = "custom"
    drawn = fig._p08_state
    field, text = typed
    w[field].value = text
    error = w["note"].value.split("<br>", 1)[1]
    assert says in error, error
    assert "Error" not in error and "could not convert" not in error and "\n" not in error
    assert fig._p08_state is drawn                                           # the last picture stays
    w[field].value = "2.0, 1.0, 0.5" if field == "custom" else "0"
    assert "color:#c00" not in w["note"].value and fig._p08_state is not drawn
