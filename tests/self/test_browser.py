"""A real-browser smoke test: JupyterLab on 127.0.0.1, headless Chromium driven by Playwright, 1024 px wide.

The notebooks (the sampler in Chinese, the fast path in both languages) run all their cells; a slider moves, the
re-run and hint buttons are clicked, the plots must change, and the browser console must stay free of
errors. The page is checked at that width: printed output never breaks inside a token and never scrolls
sideways, no figure is resized (shrunk, its text would shrink with it; stretched, it blurs), benchmark cells stay
on one line, slider tracks have one length and room to move, and labels and picker options are whole. What a
Chinese notebook prints is Chinese: at most 20 % English-prose lines, counted by course/notebook/prose.py (the same
count test_notebooks.py makes on the executed notebooks). The mine/ toggle stays on the reference while mine/ is a stub.
Saving leaves `git status` clean (the save hook, course/notebook/save_hook.py, enabled as notebook_setup does);
a restarted kernel, then a reload, leave the panels on screen (the widget-state setting) each saying it is not
live, until the notebook runs again; a real source edit then shows as modified. Each notebook run here is checked,
as saved, like a headless run (tests/self/executed_notebook.py), and is not run headless as well. With the file
browser open (JupyterLab's default) no output box overflows sideways, Chinese and Latin labels of a printed column
start at one x, and each benchmark cell of the fast notebooks gives one verdict on the machine; their benchmark cell
runs again as it does once mine/ works (the column "yours", the widest table) and must still fit
(tests/self/browser_page.py).
Needs Debian's chromium (/usr/bin/chromium, or $CHROMIUM) and `pip install playwright`; skipped, naming
what is missing, otherwise. The notebooks run on copies in a temporary git repo: the course repo stays clean.
Screenshots go to $COURSE_SCREENSHOTS when set.
"""
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from course.notebook import notebook_setup, prose
from course.notebook.layout import TRACK_MIN_PX
from course.problems import ROOT
from tests.self.browser_page import (assert_columns_line_up, assert_file_browser_open, assert_one_verdict,
                                     overflowing_outputs, time_a_working_mine)
from tests.self.executed_notebook import assert_ran_cleanly

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    sync_playwright = None

missing = [what for what, ok in (("playwright (pip install playwright)", sync_playwright is not None),
                                 ("chromium (apt-get install chromium, or set $CHROMIUM)", CHROMIUM is not None))
           if not ok]
pytestmark = [pytest.mark.skipif(bool(missing), reason="browser test needs " + " and ".join(missing)),
              pytest.mark.xdist_group("browser")]      # one JupyterLab for the module, in one worker
RUN_TIMEOUT_MS = 240_000
WIDTH = 1024                     # a small laptop: where tables wrapped and printed numbers broke
WIDE = 1280                      # a screenshot at a common laptop width too


def git(work, *args):
    return subprocess.run(["git", "-C", str(work), "-c", "user.name=course", "-c", "user.email=course@localhost",
                           "-c", "commit.gpgsign=false", *args], capture_output=True, text=True, check=True).stdout


def status(work, path):
    return git(work, "status", "--porcelain", "--untracked-files=no", "--", path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on a copy of notebooks/ (code and data linked from the repo) in a git repo with the nbstrip
    filter and the save hook installed as notebook_setup installs them; yields (base url, token, work folder)."""
    work = tmp_path_factory.mktemp("lab")
    for name in ("course", "course.toml", "solutions", "mine", "hints", "tests"):
        (work / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "notebooks", work / "notebooks")
    shutil.copy(ROOT / ".gitattributes", work / ".gitattributes")
    git(work, "init", "-q")
    assert notebook_setup.git_filter(work)
    git(work, "add", ".gitattributes", "notebooks")
    git(work, "commit", "-qm", "the course's notebooks")
    notebook_setup.save_hook_config(work / ".jupyter")              # the server extension, as in etc/jupyter
    settings = work / ".settings" / "@jupyter-widgets" / "jupyterlab-manager"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))  # = notebook_setup's
    tracker = work / ".settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))  # every cell in the DOM
    news = work / ".settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))  # no news popup
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(work / ".settings"), JUPYTERLAB_WORKSPACES_DIR=str(work / ".ws"),
               JUPYTER_RUNTIME_DIR=str(work / ".runtime"), JUPYTER_CONFIG_DIR=str(work / ".jupyter"),
               COURSE_STATE=str(work / "state.json"), MPLBACKEND="module://matplotlib_inline.backend_inline",
               PYTHONPATH=str(ROOT))                      # what notebook_setup's course_root.pth gives the server
    log = open(work / "lab.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                             f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
                             f"--ServerApp.root_dir={work}", "--LabApp.expose_app_in_browser=True"]
                            + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
                            cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start: " + (work / "lab.log").read_text()[-2000:])
        yield base, token, work
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Chromium with one profile on disk for the module: after the first page, JupyterLab's scripts come from its
    cache, compiled (a fresh context for each page parsed them again: about 10 s of CPU more in all)."""
    with sync_playwright() as p:
        b = p.chromium.launch_persistent_context(str(tmp_path_factory.mktemp("chromium")), executable_path=CHROMIUM,
                                                 args=ARGS, viewport={"width": WIDTH, "height": 900})
        yield b
        b.close()


def shot(page, name, element=None):
    """A screenshot at the page's width (1024 px) into $COURSE_SCREENSHOTS; of one element when given."""
    folder = os.environ.get("COURSE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (element or page).screenshot(path=str(Path(folder) / f"{name}.png"))


def open_notebook(browser, base, token, path, errors):
    page = browser.new_page()
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.set_default_timeout(60_000)
    page.goto(f"{base}/lab/tree/{path}?reset&token={token}", wait_until="domcontentloaded")
    wait_for_kernel(page)
    assert_file_browser_open(page)
    return page


def wait_for_kernel(page):
    page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell')", timeout=60_000)
    idle = ("(k => !!k && k.status === 'idle' && k.connectionStatus === 'connected')"
            "(window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel)")   # a kernel, started and idle
    asks = "[...document.querySelectorAll('.jp-Dialog button')].some(b => b.textContent.includes('Select'))"
    page.wait_for_function(f"() => {idle} || {asks}", timeout=60_000)   # a fresh server may ask for a kernel first
    select = page.locator(".jp-Dialog button:has-text('Select')")
    if select.count():
        select.first.click()
    page.wait_for_function(f"() => {idle}", timeout=60_000)


def run_all(page):
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")   # do not await it
    page.wait_for_function("""() => {
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        const code = [...Array(cells.length).keys()].map(i => cells.get(i)).filter(c => c.type === 'code');
        return code.length > 0 && code.every(c => c.executionCount);
    }""", timeout=RUN_TIMEOUT_MS)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Error" in t or "Traceback" in t]
    assert not tracebacks, tracebacks


def image_of(panel):
    return panel.locator(".widget-image").first.get_attribute("src")


def set_slider(page, panel, label, value):
    slider = panel.locator(".widget-slider", has=page.locator(f"label:text-is('{label}')")).first
    readout = slider.locator(".widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(str(value))
    page.keyboard.press("Enter")


def poll(page, ready, tries=100, every_ms=100):
    """ready()'s first truthy value, asked every every_ms milliseconds, at most `tries` times; None if never."""
    for _ in range(tries):
        if value := ready():
            return value
        page.wait_for_timeout(every_ms)
    return None


def wait_changed(page, panel, before):
    if not poll(page, lambda: image_of(panel) != before):
        pytest.fail("the panel's picture did not change")


def note_saying(page, note, *words):
    """The note's text once it holds every one of words: the note and the picture are two widgets, whose updates
    the page may apply in either order, so a changed picture does not mean a changed note."""
    def said():
        text = note.inner_text()
        return text if all(word in text for word in words) else None
    text = poll(page, said)
    if text is None:
        pytest.fail(f"the panel's note never said {words}: it says {note.inner_text()!r}")
    return text


# One pass over the page at WIDTH: what the learners reported, measured in the browser.
LAYOUT_JS = r"""() => {
    const px = v => parseFloat(v);
    const out = {breaking: [], wrapped: [], split_code: [], tall_cells: [], tracks: [], cut_labels: [], scrolling: [],
                 shrunk: [], cut_options: []};
    for (const el of document.querySelectorAll('.jp-OutputArea-output, .jp-OutputArea-output *')) {
        const css = getComputedStyle(el);
        if (css.wordBreak === 'break-all' || css.overflowWrap === 'anywhere' ||
            (css.overflowWrap === 'break-word' && el.matches('pre')))
            out.breaking.push(el.tagName + ': ' + css.wordBreak + ' / ' + css.overflowWrap);
    }
    for (const pre of document.querySelectorAll('.jp-OutputArea-output pre')) {
        const lines = pre.textContent.replace(/\n$/, '').split('\n').length;
        const rendered = Math.round(pre.scrollHeight / px(getComputedStyle(pre).lineHeight));
        if (rendered > lines) out.wrapped.push(pre.textContent.slice(0, 80) + ` (${lines} lines drawn on ${rendered})`);
    }
    for (const pre of document.querySelectorAll(".jp-OutputArea-output[data-mime-type$='stdout'] pre"))
        if (pre.scrollWidth > pre.clientWidth + 1)            // printed lines; a hint's code block may scroll
            out.scrolling.push(pre.textContent.split('\n').reduce((a, b) => b.length > a.length ? b : a));
    for (const img of document.querySelectorAll('.jp-OutputArea-output img'))
        if (img.naturalWidth && Math.abs(img.getBoundingClientRect().width - img.naturalWidth) > 1)
            out.shrunk.push(`${img.naturalWidth} px shown at ${Math.round(img.getBoundingClientRect().width)} px`);
    const ctx = document.createElement('canvas').getContext('2d');
    for (const select of document.querySelectorAll('.jp-OutputArea-output select')) {
        ctx.font = getComputedStyle(select).font;
        const room = select.clientWidth - 28;                           // the arrow and the padding
        for (const option of select.options)
            if (ctx.measureText(option.text).width > room) out.cut_options.push(option.text);
    }
    for (const code of document.querySelectorAll('.jp-RenderedHTMLCommon :not(pre) > code'))
        if (new Set([...code.getClientRects()].map(r => Math.round(r.top))).size > 1)
            out.split_code.push(code.innerText);
    for (const td of document.querySelectorAll('.jp-OutputArea-output td')) {
        const css = getComputedStyle(td);
        const inner = td.clientHeight - px(css.paddingTop) - px(css.paddingBottom);
        if (inner > 1.5 * px(css.lineHeight)) out.tall_cells.push(td.innerText + ` (${inner}px)`);
    }
    for (const track of document.querySelectorAll('.widget-slider .slider-container'))
        out.tracks.push(Math.round(track.getBoundingClientRect().width));
    for (const label of document.querySelectorAll('.widget-slider .widget-label'))
        if (label.scrollWidth > label.clientWidth + 1) out.cut_labels.push(label.innerText);
    return out;
}"""


def assert_layout(page):
    """No output breaks inside a token, printed lines never wrap nor scroll sideways, no figure is resized, inline
    code is never split, table cells hold one line, slider tracks have one length (room to move) and their labels
    are whole, a picker's options fit it, and no output box overflows sideways."""
    layout = page.evaluate(LAYOUT_JS)
    assert not layout["breaking"], layout["breaking"]
    assert not layout["wrapped"], layout["wrapped"]
    assert not layout["scrolling"], layout["scrolling"]
    assert not layout["cut_options"], layout["cut_options"]
    assert min(layout["tracks"]) >= TRACK_MIN_PX, layout["tracks"]
    assert not layout["split_code"], layout["split_code"]
    assert not layout["tall_cells"], layout["tall_cells"]
    assert layout["tracks"] and max(layout["tracks"]) - min(layout["tracks"]) <= 1, layout["tracks"]
    assert not layout["cut_labels"], layout["cut_labels"]
    assert not layout["shrunk"], layout["shrunk"]
    assert not overflowing_outputs(page), overflowing_outputs(page)
    return layout


FIGURES_AFTER_JS = r"""(heading) => {
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
    const at = cells.findIndex(c => [...c.querySelectorAll('h2')].some(h => h.textContent.startsWith(heading)));
    const code = at < 0 ? null : cells.slice(at + 1).find(c => c.classList.contains('jp-CodeCell'));
    const images = code ? [...code.querySelectorAll('.jp-OutputArea-output img')] : [];
    if (images.length) images[0].scrollIntoView({block: 'center'});
    return images.map(i => [i.naturalWidth, i.clientWidth]);
}"""


def figures_after(page, heading):
    """[natural width, shown width] of each image the first code cell after the markdown heading drew; the first
    is scrolled into view."""
    return page.evaluate(FIGURES_AFTER_JS, heading)


def visible_stale_notes(page):
    return sum(note.is_visible() for note in page.locator(".p08-stale").all())


def wait_stale_notes(page, count):
    if not poll(page, lambda: visible_stale_notes(page) >= count, tries=150, every_ms=200):
        pytest.fail(f"{visible_stale_notes(page)} panels say they are not live, expected {count}")


def save(page):
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")


def assert_saved_ran_cleanly(work, notebook, path):
    """The notebook as saved after its run passes the checks a headless run gets (tests/self/executed_notebook.py);
    the headless run of a notebook marked runs_notebook is skipped while this test runs (tests/self/conftest.py)."""
    nb = nbformat.read(work / path, as_version=4)
    assert_ran_cleanly(notebook, nb, roots=(ROOT, work))


def assert_chinese_prose(page):
    """What the notebook printed (its stdout) is Chinese: at most MAX_ENGLISH_SHARE English-prose lines."""
    streams = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']")
    lines = [line for text in streams.all_inner_texts() for line in prose.printed_lines(text)]
    english, counted, share = prose.english_share(lines)
    assert len(counted) > 20 and share <= prose.MAX_ENGLISH_SHARE, (f"{share:.0%} English", english)


def shot_wide(page, name, element):
    """The element again at WIDE px (then back to WIDTH)."""
    page.set_viewport_size({"width": WIDE, "height": 900})
    page.wait_for_timeout(500)
    element.scroll_into_view_if_needed()
    shot(page, name, element)
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.wait_for_timeout(500)


BENCH_HEADINGS = {"en": ("The benchmark", "Where the fast path starts to win"),
                  "zh": ("基准测试", "快速路径从哪里开始赢")}


def assert_benchmark_with_a_working_mine(page, lang):
    """Each benchmark cell gives one verdict; then the benchmark cell runs again as it does once mine/ works: its
    table gains the column 'yours', still fits the page, and its output still gives one verdict."""
    table_cell, grid_cell = BENCH_HEADINGS[lang]
    for heading in (table_cell, grid_cell):
        assert_one_verdict(page, heading)
    time_a_working_mine(page, ROOT)
    table = page.locator("table:has(th)").filter(has_text="你的" if lang == "zh" else "yours (mine/)").first
    table.scroll_into_view_if_needed()
    fits = table.evaluate("t => [t.parentElement.scrollWidth, t.parentElement.clientWidth]")
    assert fits[0] <= fits[1], f"the benchmark table with yours is {fits[0]} px wide in {fits[1]} px"
    assert_one_verdict(page, table_cell)
    assert not overflowing_outputs(page), overflowing_outputs(page)
    shot(page, f"p08_fast_{lang}_benchmark_mine", page.locator(".jp-Cell-outputArea").filter(has=table).first)


@pytest.mark.runs_notebook("p08-zh")
def test_sampler_notebook_in_chinese(lab, browser):
    base, token, work = lab
    errors = []
    page = open_notebook(browser, base, token, "notebooks/p08_sampler.ipynb", errors)
    run_all(page)
    assert_chinese_prose(page)
    panels = page.locator(".widget-vbox:has(.widget-image)")
    stale = page.locator(".p08-stale")
    assert stale.count() >= 3 and visible_stale_notes(page) == 0        # filter, invariance, hints: all live
    filter_panel = panels.filter(has=page.locator("label:text-is('temperature')")).first
    filter_panel.scroll_into_view_if_needed()
    before = image_of(filter_panel)
    set_slider(page, filter_panel, "top_p", 0.95)
    wait_changed(page, filter_panel, before)
    # the toggle shows the code that runs: mine/ is a stub, so it stays on the reference and says why
    toggle = filter_panel.locator(".widget-toggle-buttons")
    assert toggle.locator(".mod-active").inner_text() == "参考解 solutions/"
    assert "还是桩代码" in filter_panel.locator(".widget-html").nth(1).inner_text()
    toggle.locator("button:has-text('我的代码 mine/')").click()    # the kernel moves it back
    page.wait_for_timeout(300)
    poll(page, lambda: toggle.locator(".mod-active").inner_text() == "参考解 solutions/")
    assert toggle.locator(".mod-active").inner_text() == "参考解 solutions/"
    shot(page, "p08_sampler_zh_panel1", filter_panel)
    shot_wide(page, "p08_sampler_zh_panel1_1280", filter_panel)
    again = page.locator("button:has-text('换一批同伴再跑一次')")
    invariance = panels.filter(has=again).first
    note = invariance.locator(".widget-html:not(.p08-stale)").first
    before, first_run = image_of(invariance), note.inner_text()
    again.click()
    wait_changed(page, invariance, before)
    second_run = note_saying(page, note, "第 2 次运行")
    assert second_run != first_run
    peers = [[line.split("同伴")[-1] for line in text.splitlines() if line.startswith("混合 ")]
             for text in (first_run, second_run)]
    assert len(peers[0]) == 3 and not set(peers[0]) & set(peers[1]), peers     # new peers on every run
    invariance.scroll_into_view_if_needed()
    shot(page, "p08_sampler_zh_panel2", invariance)
    for i, cell in enumerate(page.locator(".jp-CodeCell .jp-OutputArea:has(img)").all()):
        cell.scroll_into_view_if_needed()                               # the intro figure and the histogram
        shot(page, f"p08_sampler_zh_figure{i}", cell)
    page.locator("button:has-text('提示 L1')").click()
    page.wait_for_function("document.body.innerText.includes('关键问题') || document.body.innerText.includes('例')")
    page.locator("button:has-text('提示 L3')").click()
    confirm = page.locator("button:has-text('确定，显示答案')")
    confirm.wait_for(state="visible")
    confirm.click()
    confirm.wait_for(state="hidden")
    shot(page, "p08_sampler_zh_hints")
    assert_layout(page)
    page.locator(".jp-OutputArea-output pre:has-text('bf16:')").first.scroll_into_view_if_needed()
    shot(page, "p08_sampler_zh_printed")
    assert_columns_line_up(page, "之前的质量", "[")                       # Chinese and Latin labels, one column
    assert_columns_line_up(page, "删 mass_before", "[", lambda line: line.startswith("  "))
    assert_columns_line_up(page, "期望概率", "[")
    assert not errors, errors
    # save: only outputs and widget state changed, so git status stays clean (the save hook)
    save(page)
    saved = (work / "notebooks" / "p08_sampler.ipynb").read_text(encoding="utf-8")
    assert "application/vnd.jupyter.widget-state+json" in saved
    assert status(work, "notebooks/p08_sampler.ipynb") == "", git(work, "diff")
    # Kernel > Restart: the panels stay on screen, each saying it is not live
    page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.sessionContext.restartKernel(); }")
    wait_stale_notes(page, 3)
    filter_panel.scroll_into_view_if_needed()
    shot(page, "p08_sampler_zh_restarted")
    # shut the kernel down and reload: the saved widget state brings the panels back, still saying so
    for session in json.load(urllib.request.urlopen(f"{base}/api/sessions?token={token}")):
        request = urllib.request.Request(f"{base}/api/sessions/{session['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(request)
    page.reload()
    page.wait_for_function("document.querySelectorAll('.widget-image').length >= 2", timeout=60_000)
    assert "model not found" not in page.locator(".jp-Notebook").inner_text()
    wait_stale_notes(page, 3)
    assert "重新运行" in page.locator(".p08-stale").first.inner_text()
    page.locator(".p08-stale").first.scroll_into_view_if_needed()
    shot(page, "p08_sampler_zh_reopened")
    # what the note says brings the panels back to life: run the notebook again from the top
    wait_for_kernel(page)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    run_all(page)
    assert page.locator(".p08-stale").count() >= 3 and visible_stale_notes(page) == 0
    filter_panel = panels.filter(has=page.locator("label:text-is('temperature')")).first
    filter_panel.scroll_into_view_if_needed()
    before = image_of(filter_panel)
    set_slider(page, filter_panel, "top_p", 0.9)
    wait_changed(page, filter_panel, before)
    # a real edit of a cell's source is a change git must see
    page.evaluate("""() => {
        const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        const code = [...Array(cells.length).keys()].map(i => cells.get(i)).find(c => c.type === 'code');
        code.sharedModel.setSource(code.sharedModel.getSource() + '\\n# an edit');
    }""")
    save(page)
    assert status(work, "notebooks/p08_sampler.ipynb") == " M notebooks/p08_sampler.ipynb\n"
    assert "+    \"# an edit\"" in git(work, "diff")
    assert_saved_ran_cleanly(work, "p08-zh", "notebooks/p08_sampler.ipynb")
    assert not errors, errors                                         # restart and reload included
    page.close()


@pytest.mark.runs_notebook("p08-fast-en")
def test_fast_path_notebook_in_english(lab, browser):
    base, token, work = lab
    errors = []
    page = open_notebook(browser, base, token, "notebooks/en/p08_fast_path.ipynb", errors)
    run_all(page)
    top_k_label = page.locator("label:text-is('top_k (-1 off)')")
    panel = page.locator(".widget-vbox:has(.widget-image)").filter(has=top_k_label).first
    panel.scroll_into_view_if_needed()
    note = panel.locator(".widget-html:not(.p08-stale)").first
    assert "certain, the window decides" in note.inner_text()
    assert "code: route, window_topk" in note.inner_text()              # says whose code ran
    before = image_of(panel)
    panel.locator("select").select_option(label="heavy tail (alpha 1.25)")
    wait_changed(page, panel, before)
    before = image_of(panel)
    set_slider(page, panel, "top_k (-1 off)", -1)
    wait_changed(page, panel, before)
    note_saying(page, note, "not certain", "exact route")
    shot(page, "p08_fast_en_window_panel")
    layout = assert_layout(page)
    assert len(layout["tracks"]) == 3
    table = page.locator("table:has-text('fast path')").first
    table.scroll_into_view_if_needed()
    fits = table.evaluate("t => [t.parentElement.scrollWidth, t.parentElement.clientWidth]")
    assert fits[0] <= fits[1], f"the benchmark table is {fits[0]} px wide in {fits[1]} px"
    shot(page, "p08_fast_en_benchmark")
    for heading, name in (("The benchmark", "bench_chart"), ("Where the fast path starts to win", "crossover"),
                          ("The batch-invariance experiment in miniature", "invariance_count")):
        shown = figures_after(page, heading)                   # [natural width, shown width] per image
        assert len(shown) == 1 and shown[0][0] <= shown[0][1] + 1, f"{heading}: {shown} (shrunk to fit the page)"
        page.wait_for_timeout(200)
        shot(page, f"p08_fast_en_{name}")
    page.locator(".jp-OutputArea-output pre:has-text('torch.sum, 4 threads')").first.scroll_into_view_if_needed()
    shot(page, "p08_fast_en_printed")
    assert not errors, errors
    save(page)
    assert '"output_type": "display_data"' in (work / "notebooks/en/p08_fast_path.ipynb").read_text(encoding="utf-8")
    assert status(work, "notebooks/en/p08_fast_path.ipynb") == "", git(work, "diff")
    assert_saved_ran_cleanly(work, "p08-fast-en", "notebooks/en/p08_fast_path.ipynb")
    assert_benchmark_with_a_working_mine(page, "en")
    page.close()


@pytest.mark.runs_notebook("p08-fast-zh")
def test_fast_path_notebook_in_chinese(lab, browser):
    """The Chinese fast-path notebook prints Chinese and fits the page; its window panel and §3's figure (torch.sum of
    a lone row against the same row in a batch; with the stub, §3's fix cell only says to write row_total) are
    screenshot at 1024 and 1280 px."""
    base, token, work = lab
    errors = []
    page = open_notebook(browser, base, token, "notebooks/p08_fast_path.ipynb", errors)
    run_all(page)
    assert_chinese_prose(page)
    top_k_label = page.locator("label:text-is('top_k (-1 关)')")
    panel = page.locator(".widget-vbox:has(.widget-image)").filter(has=top_k_label).first
    panel.scroll_into_view_if_needed()
    note = panel.locator(".widget-html:not(.p08-stale)").first
    assert "certain，窗口说了算" in note.inner_text()
    before = image_of(panel)
    panel.locator("select").select_option(label="尖峰，舍入到 bf16（有并列）")
    wait_changed(page, panel, before)
    before = image_of(panel)
    set_slider(page, panel, "top_k (-1 关)", 60)
    wait_changed(page, panel, before)
    note_saying(page, note, "不 certain")
    shot(page, "p08_fast_zh_window_panel", panel)
    shot_wide(page, "p08_fast_zh_window_panel_1280", panel)
    sums = page.locator(".jp-CodeCell .jp-OutputArea:has(img)").filter(has_text="torch.sum，4 个线程").first
    sums.scroll_into_view_if_needed()
    shot(page, "p08_fast_zh_row_total", sums)
    shot_wide(page, "p08_fast_zh_row_total_1280", sums)
    assert not errors, errors
    assert_layout(page)
    save(page)
    assert status(work, "notebooks/p08_fast_path.ipynb") == "", git(work, "diff")
    assert_saved_ran_cleanly(work, "p08-fast-zh", "notebooks/p08_fast_path.ipynb")
    labels = ("单独", "在同伴旁", "博客", "快速路径", "应为", "torch", "logits")         # the lines of a printed column
    for needle, marker in (("在同伴旁", "路线"), ("应为", "保留"), ("应为", "概率"), ("torch.sort（全词表）", " ms")):
        assert_columns_line_up(page, needle, marker, lambda line: line.startswith(labels))
    assert_benchmark_with_a_working_mine(page, "zh")
    page.close()


@pytest.mark.runs_notebook("p08-kernel-en")
def test_kernel_notebook_in_english(lab, browser):
    """The kernel notebook (Triton's interpreter in the notebook's kernel) with the stub: each fix cell says which
    function to write, the search panel redraws when the number of passes and the mode change, the page fits."""
    base, token, work = lab
    errors = []
    page = open_notebook(browser, base, token, "notebooks/en/p08_kernel.ipynb", errors)
    run_all(page)
    passes = page.locator("label:text-is('passes')")
    panel = page.locator(".widget-vbox:has(.widget-image)").filter(has=passes).first
    panel.scroll_into_view_if_needed()
    note = panel.locator(".widget-html:not(.p08-stale)").first
    assert "a value of the row" in note.inner_text()
    before = image_of(panel)
    set_slider(page, panel, "passes", 12)
    wait_changed(page, panel, before)
    note_saying(page, note, "keys are left")
    before = image_of(panel)
    panel.locator("button:has-text('top-p')").first.click()
    wait_changed(page, panel, before)
    note_saying(page, note, "top-p's cut")
    shot(page, "p08_kernel_en_search_panel", panel)
    assert page.locator(".jp-OutputArea-output pre:has-text('not written yet')").count() == 6   # §1-§6
    assert_layout(page)
    assert not errors, errors
    save(page)
    assert status(work, "notebooks/en/p08_kernel.ipynb") == "", git(work, "diff")
    assert_saved_ran_cleanly(work, "p08-kernel-en", "notebooks/en/p08_kernel.ipynb")
    for heading, name in (("§0", "first_kernel"), ("§1", "launch_trap")):
        page.locator(".jp-Notebook .jp-Cell h2", has_text=heading).first.scroll_into_view_if_needed()
        shot(page, f"p08_kernel_en_{name}")
    page.close()
