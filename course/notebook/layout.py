"""What the panels share on the page: a note that shows only while a panel has no kernel behind it, slider sizes
that give every track the same length, and the notebook's CSS for printed output.

A panel reopened from the widget state saved with the notebook (or left over after a kernel restart) still draws,
but nothing answers its sliders. ipywidgets marks every view whose model has no live connection with the class
`jupyter-widgets-disconnected` (and draws a broken-link icon before each widget); the note's own <style> shows
the note and dims the panel's controls, in place of those icons, only then. A live panel hides the note.
"""
import ipywidgets as W
from IPython.display import HTML

from course.lang import pick

PANEL_CLASS, STALE_CLASS, STYLE_CLASS = "p08-panel", "p08-stale", "p08-style"
DISCONNECTED = "jupyter-widgets-disconnected"          # set by ipywidgets on a view with no live model

STALE_CSS = f"""
.{STALE_CLASS} {{ display: none !important; }}
.{STALE_CLASS}.{DISCONNECTED} {{ display: flex !important; }}
.{STALE_CLASS} .p08-stale-text {{ background: #fff3cd; border: 1px solid #e0a800; border-radius: 4px;
  padding: 4px 8px; margin: 2px 0 6px; color: #5c4400; line-height: 1.4; white-space: normal; }}
.{PANEL_CLASS}.{DISCONNECTED} > .widget-hbox, .{PANEL_CLASS}.{DISCONNECTED} > .widget-button,
.{PANEL_CLASS}.{DISCONNECTED} > .widget-html:not(.{STALE_CLASS}) {{ opacity: 0.45; pointer-events: none; }}
.{PANEL_CLASS}.{DISCONNECTED}::before, .{PANEL_CLASS} .{DISCONNECTED}::before {{ display: none !important; }}
"""

# Printed output and code blocks (a hint's skeleton) keep their tokens whole and their lines as written: no line
# breaks inside a number or a word (JupyterLab's default for output is `word-break: break-all`); a line wider than
# the page scrolls sideways instead. Full-width punctuation keeps its full width (Chromium otherwise trims a
# "）" beside an ideographic space by half, and a column padded by course/notebook/text.py moves). Inline code (`./check.sh p08-fast`) stays on one line. Scoped to the notebook
# that displays it: other notebooks are untouched.
PAGE_CSS = f"""
.jp-Notebook:has(.{STYLE_CLASS}) :is(.jp-OutputArea-output, .jp-RenderedHTMLCommon) :is(pre, pre code) {{
  white-space: pre; word-break: normal; overflow-wrap: normal; text-spacing-trim: space-all; }}
.jp-Notebook:has(.{STYLE_CLASS}) :is(.jp-OutputArea-output, .jp-RenderedHTMLCommon) pre {{ overflow-x: auto; }}
.jp-Notebook:has(.{STYLE_CLASS}) .jp-RenderedHTMLCommon :not(pre) > code {{ white-space: nowrap; }}
"""

SLIDER_DESCRIPTION_WIDTH = "7.5em"      # the longest slider label, "top_k (-1 off)", fits
ROW_WIDTH = "34em"                      # one control a row: 442 px of the 592 px output area at a 1024 px window
TRACK_MIN_PX = 240                      # a slider's track at ROW_WIDTH, 249 px measured (top_k's -1..400: < 2 a pixel)


def slider_sizes() -> dict:
    """Keyword arguments for every slider: one description width and one total width, so the tracks line up, each
    slider on its own row with a track of at least TRACK_MIN_PX."""
    return {"style": {"description_width": SLIDER_DESCRIPTION_WIDTH}, "layout": W.Layout(width=ROW_WIDTH)}


def panel_image() -> W.Image:
    """A panel's picture at its own size: not stretched to the panel's width (blurred), shrunk only when the page
    is narrower than the figure."""
    return W.Image(format="png", layout=W.Layout(align_self="flex-start", max_width="100%", height="auto"))


def row_sizes() -> dict:
    """Keyword arguments for a dropdown or a text box: the label takes the width it needs, the box the rest of a
    row as wide as a slider's, so an option's text is never cut."""
    return {"style": {"description_width": "initial"}, "layout": W.Layout(width=ROW_WIDTH)}


def stale_note(lang="zh") -> W.HTML:
    """Hidden while the panel is live; says it must be re-run while it is not."""
    text = pick(lang, "⚠ 这个面板没有连接到运行中的内核（notebook 重新打开过，或内核重启过）：拖动滑块、点按钮都不会重画。"
                      "从上到下重新运行 notebook（Run → Run All Cells）它就会重新动起来。",
                "⚠ This panel is not connected to a running kernel (the notebook was reopened, or its kernel "
                "restarted): moving a slider or clicking a button redraws nothing. Run the notebook again from the "
                "top (Run → Run All Cells) to bring it back to life.")
    note = W.HTML(f"<style>{STALE_CSS}</style><div class='p08-stale-text'>{text}</div>")
    note.add_class(STALE_CLASS)
    return note


def panel_box(children, lang="zh") -> W.VBox:
    """A panel's outer box: its stale note first, then its widgets."""
    box = W.VBox([stale_note(lang), *children])
    box.add_class(PANEL_CLASS)
    return box


def page_style() -> HTML:
    """Displayed once by a notebook's setup cell: the CSS for printed output (see PAGE_CSS)."""
    return HTML(f"<style>{PAGE_CSS}</style><div class='{STYLE_CLASS}'></div>")
