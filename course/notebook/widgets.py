"""The notebooks' panels and figures, one import for the notebooks: `from course.notebook import widgets as cw`.

Each concept lives in its own module; every panel is built by a plain function returning its widgets and a
matplotlib Figure (re-rendered into an ipywidgets Image on each change), so tests drive it without a kernel:
`fig._p08_state` holds what was last computed, `fig._p08_artists` what was drawn.
"""
from course.notebook.bench_view import explain_losses, losing_cases, results_html  # noqa: F401
from course.notebook.figure_histogram import empirical_histogram  # noqa: F401
from course.notebook.figure_intro import talent_show_figure  # noqa: F401
from course.notebook.impl_choice import (FastImpl, choose_fast_impl, choose_impl, impl_label,  # noqa: F401
                                         is_learners, resolve_impl, unfinished)
from course.notebook.layout import page_style, row_sizes, slider_sizes, stale_note  # noqa: F401
from course.notebook.panel_filter import WORKED_PROBS, build_ui, draw_filter, filter_steps, preset_rows  # noqa: F401
from course.notebook.panel_hints import hint_buttons  # noqa: F401
from course.notebook.panel_invariance import build_invariance_panel, draw_invariance  # noqa: F401
from course.notebook.panel_window import build_window_panel, window_plan, window_rows  # noqa: F401
from course.notebook.plotting import (BEFORE_COLOR, KEPT_COLOR, REMOVED_COLOR, cjk_font, fig_text,  # noqa: F401
                                      figsize, missing_glyphs, new_figure, render_png, rounded)
from course.notebook.radix_demo import bucket_select, draw_buckets, top_p_buckets  # noqa: F401
from course.notebook.text import columns, in_language, pad, pad_all, wrap  # noqa: F401
