"""Hint buttons for a notebook: L1/L2 show at once; L3 (the answers) asks first, as ./check.sh --hint 3 does
(course.hints.L3_RULE), in the same words."""
import ipywidgets as W

from course import hints, state
from course.lang import pick
from course.notebook.layout import panel_box


def hint_buttons(problem="p08", lang="zh"):
    """L1/L2/L3 buttons; a click shows that level's markdown (course.hints.read) and records it as seen.
    L3 first shows a question with a 'show the answers' button; only that second click reveals it."""
    out = W.Output()
    buttons = [W.Button(description=pick(lang, f"提示 L{n}", f"hint L{n}")) for n in hints.LEVELS]
    confirm = W.Button(description=pick(lang, "确定，显示答案", "yes, show the answers"), button_style="warning",
                       layout=W.Layout(width="auto", display="none"))
    box = panel_box([W.HBox(buttons + [confirm]), out], lang)
    box._p08_state = {"revealed": [], "text": "", "asked": False}

    def show(text):
        out.outputs = ({"output_type": "display_data", "metadata": {},
                        "data": {"text/markdown": text, "text/plain": text}},)

    def reveal(level):
        confirm.layout.display = "none"
        text = hints.read(problem, level, lang)
        show(text)
        box._p08_state["revealed"].append(level)
        box._p08_state["text"] = text
        try:
            state.record_hint(problem, level)   # ./check.sh list shows it, as after --hint N
        except OSError:
            pass

    def ask():
        box._p08_state["asked"] = True
        question = hints.question(lang).replace("[y/N]", "").strip()      # the words ./check.sh --hint 3 asks with
        box._p08_state["text"] = f"**{question}** " + pick(lang, "右边的按钮会显示它。", "The button on the right shows it.")
        show(box._p08_state["text"])
        confirm.layout.display = None

    for level, button in zip(hints.LEVELS, buttons):
        button.on_click(lambda _button, level=level: ask() if level == 3 else reveal(level))
    confirm.on_click(lambda _button: reveal(3))
    box._p08_buttons = {"levels": buttons, "confirm": confirm}
    return box
