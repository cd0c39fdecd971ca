"""Figure helpers shared by every notebook panel: colours, the CJK font, labels in the learner's language, sizes, PNG.

Chinese labels are drawn only when a Chinese-capable font is installed (e.g. Debian's fonts-noto-cjk);
otherwise the English label is used, so a figure never shows missing-glyph boxes.

Sizes are in pixels. JupyterLab shrinks an image wider than its output area to fit (max-width: 100 %), and the
text shrinks with it. At a 1024 px window with the file browser open, the output area is 592 px wide; every figure
is at most WIDTH_PX wide at DPI (inline figures and panel images alike), so it is drawn 1:1 there and at 1280 px,
and every text keeps at least MIN_FONT_PX on screen (tests/self/test_figures.py measures both).
"""
import io
import warnings
from functools import lru_cache

KEPT_COLOR, REMOVED_COLOR, BEFORE_COLOR, CROSS_COLOR = "tab:orange", "gray", "tab:blue", "tab:red"
DPI = 100                 # pixels per inch of every figure, on screen and in a panel's PNG
OUTPUT_PX = 592           # JupyterLab's output area at a 1024 px window, file browser open (measured)
WIDTH_PX = 560            # every figure's width: drawn 1:1 there (an inline figure's tight box adds up to 20 px)
FONT_PT = 9               # the smallest font a figure uses: 12.5 px at DPI
MIN_FONT_PX = 10          # what a test asserts every text of every figure keeps on screen at 1024 px
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK TC", "Source Han Sans SC", "WenQuanYi Zen Hei",
             "WenQuanYi Micro Hei", "SimHei", "Microsoft YaHei", "PingFang SC", "Heiti SC", "Arial Unicode MS")
CJK_FILE_HINTS = ("notosanscjk", "sourcehansans", "wqy", "simhei", "msyh", "pingfang")


@lru_cache(maxsize=None)
def cjk_font():
    """A Chinese-capable font matplotlib can use (registered as the first sans-serif), or None.

    matplotlib caches its font list; a font installed after that cache was built is found by file name
    and registered here.
    """
    from matplotlib import font_manager, rcParams
    names = {f.name for f in font_manager.fontManager.ttflist}
    font = next((n for n in CJK_FONTS if n in names), None)
    if font is None:
        for path in font_manager.findSystemFonts():
            if any(hint in path.lower().replace("-", "").replace("_", "") for hint in CJK_FILE_HINTS):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        names = {f.name for f in font_manager.fontManager.ttflist}
        font = next((n for n in CJK_FONTS if n in names), None)
    if font:
        rcParams["font.sans-serif"] = [font, *rcParams["font.sans-serif"]]
        rcParams["axes.unicode_minus"] = False      # some CJK fonts lack U+2212
    return font


def fig_text(lang, zh, en) -> str:
    """Figure text in the learner's language: Chinese only where a Chinese font exists, else English."""
    return zh if lang != "en" and cjk_font() else en


def figsize(height_px, width_px=WIDTH_PX) -> tuple:
    """A figure size in inches for a picture of width_px x height_px at DPI."""
    return width_px / DPI, height_px / DPI


def new_figure(height_px, width_px=WIDTH_PX):
    """A matplotlib Figure of width_px x height_px at DPI with constrained layout (its drawing code sets FONT_PT, or
    larger, on ticks, labels and legends)."""
    from matplotlib.figure import Figure
    return Figure(figsize=figsize(height_px, width_px), dpi=DPI, layout="constrained")


def screen_font_px(fig, text, shown_px=OUTPUT_PX) -> float:
    """The height in screen pixels of a text's font once fig is shown in an output area shown_px wide."""
    width = fig.get_size_inches()[0] * fig.dpi
    return text.get_fontsize() * fig.dpi / 72 * min(1.0, shown_px / width)


def render_png(fig, dpi=DPI) -> bytes:
    """The figure as PNG bytes, for an ipywidgets Image (works with or without a kernel)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def render_png_and_missing_glyphs(fig) -> tuple:
    """(the figure as PNG bytes, the 'Glyph ... missing from font' warnings drawing it raised), from one drawing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = render_png(fig)
    return png, [str(w.message) for w in caught if "missing from" in str(w.message)]


def missing_glyphs(fig) -> list:
    """The 'Glyph ... missing from font' warnings drawing fig raises (a test asserts there are none)."""
    return render_png_and_missing_glyphs(fig)[1]


def rounded(values, digits=4):
    """A tensor or list as a list of floats rounded for printing: 0.2, not -0.20000000298023224."""
    values = values.tolist() if hasattr(values, "tolist") else values
    if isinstance(values, (int, float)):
        return round(values, digits)
    return [rounded(v, digits) for v in values]
