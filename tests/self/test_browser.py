"""A real-browser smoke test: JupyterLab on 127.0.0.1, headless Chromium driven by Playwright.

Both notebooks (the sampler in Chinese, the fast path in English) run all their cells; a slider moves, the
re-run and hint buttons are clicked, the plots must change, and the browser console must stay free of
errors. Then the notebook is saved, its kernel shut down and the page reloaded: with the widget-state
setting (course/notebook/notebook_setup.py) the panels come back instead of "Error displaying widget".
Needs Debian's chromium (/usr/bin/chromium, or $CHROMIUM) and `pip install playwright`; skipped, naming
what is missing, otherwise. The notebooks run on copies in a temporary folder: the repo stays clean.
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

import pytest

from course.problems import ROOT

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
pytestmark = pytest.mark.skipif(bool(missing), reason="browser test needs " + " and ".join(missing))
RUN_TIMEOUT_MS = 240_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on a copy of notebooks/ (code and data linked from the repo); yields (base url, token)."""
    work = tmp_path_factory.mktemp("lab")
    for name in ("course", "course.toml", "solutions", "mine", "hints", "tests"):
        (work / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "notebooks", work / "notebooks")
    settings = work / ".settings" / "@jupyter-widgets" / "jupyterlab-manager"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))  # = notebook_setup's
    tracker = work / ".settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))  # every cell in the DOM
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(work / ".settings"), JUPYTERLAB_WORKSPACES_DIR=str(work / ".ws"),
               JUPYTER_RUNTIME_DIR=str(work / ".runtime"), COURSE_STATE=str(work / "state.json"), MPLBACKEND="module://matplotlib_inline.backend_inline")
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
        yield base, token
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def shot(page, name):
    folder = os.environ.get("COURSE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)


def open_notebook(browser, base, token, path, errors):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.set_default_timeout(60_000)
    page.goto(f"{base}/lab/tree/{path}?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell')", timeout=60_000)
    select = page.locator(".jp-Dialog button:has-text('Select')")
    try:
        select.wait_for(state="visible", timeout=5_000)      # "Select Kernel" on a fresh server
        select.click()
    except Exception:
        pass
    page.wait_for_function("document.querySelector('.jp-Notebook-ExecutionIndicator[data-status=\"idle\"]') !== null",
                           timeout=60_000)
    return page


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


def wait_changed(page, panel, before):
    for _ in range(100):
        if image_of(panel) != before:
            return
        page.wait_for_timeout(100)
    pytest.fail("the panel's picture did not change")


def test_sampler_notebook_in_chinese(lab, browser):
    base, token = lab
    errors = []
    page = open_notebook(browser, base, token, "notebooks/p08_sampler.ipynb", errors)
    run_all(page)
    panels = page.locator(".widget-vbox:has(.widget-image)")
    filter_panel = panels.filter(has=page.locator("label:text-is('temperature')")).first
    filter_panel.scroll_into_view_if_needed()
    before = image_of(filter_panel)
    set_slider(page, filter_panel, "top_p", 0.95)
    wait_changed(page, filter_panel, before)
    shot(page, "p08_sampler_zh_panel1")
    again = page.locator("button:has-text('换一批同伴再跑一次')")
    invariance = panels.filter(has=again).first
    before, note = image_of(invariance), invariance.locator(".widget-html").first.inner_text()
    again.click()
    wait_changed(page, invariance, before)
    assert "第 2 次运行" in invariance.locator(".widget-html").first.inner_text() != note
    invariance.scroll_into_view_if_needed()
    shot(page, "p08_sampler_zh_panel2")
    page.locator("button:has-text('提示 L1')").click()
    page.wait_for_function("document.body.innerText.includes('关键问题') || document.body.innerText.includes('例')")
    page.locator("button:has-text('提示 L3')").click()
    confirm = page.locator("button:has-text('确定，显示答案')")
    confirm.wait_for(state="visible")
    confirm.click()
    confirm.wait_for(state="hidden")
    shot(page, "p08_sampler_zh_hints")
    assert not errors, errors
    # save, shut the kernel down, reload: the saved widget state brings the panels back
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_timeout(1500)
    sessions = json.load(urllib.request.urlopen(f"{base}/api/sessions?token={token}"))
    for session in sessions:
        request = urllib.request.Request(f"{base}/api/sessions/{session['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(request)
    page.reload()
    page.wait_for_function("document.querySelectorAll('.widget-image').length >= 2", timeout=60_000)
    assert "model not found" not in page.locator(".jp-Notebook").inner_text()
    shot(page, "p08_sampler_zh_reopened")
    page.close()


def test_fast_path_notebook_in_english(lab, browser):
    base, token = lab
    errors = []
    page = open_notebook(browser, base, token, "notebooks/en/p08_fast_path.ipynb", errors)
    run_all(page)
    top_k_label = page.locator("label:text-is('top_k (-1 off)')")
    panel = page.locator(".widget-vbox:has(.widget-image)").filter(has=top_k_label).first
    panel.scroll_into_view_if_needed()
    note = panel.locator(".widget-html").first
    assert "one topk is enough" in note.inner_text()
    before = image_of(panel)
    panel.locator("select").select_option(label="heavy tail (alpha 1.25)")
    wait_changed(page, panel, before)
    before = image_of(panel)
    set_slider(page, panel, "top_k (-1 off)", -1)
    wait_changed(page, panel, before)
    assert "widened" in note.inner_text()
    shot(page, "p08_fast_en_window_panel")
    page.locator("table:has-text('fast path')").first.scroll_into_view_if_needed()
    shot(page, "p08_fast_en_benchmark")
    assert not errors, errors
    page.close()
