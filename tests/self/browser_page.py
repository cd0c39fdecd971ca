"""What the browser test (tests/self/test_browser.py) measures on a notebook's page besides its layout pass: the
file browser is open (JupyterLab's default, the narrowest output area), no output box overflows sideways, printed
columns start at one x as drawn (a Chinese label beside a Latin one), and a benchmark cell gives one verdict on the
machine. And the helpers to run the fast notebook's benchmark again as it runs once mine/ works."""
from course.bench import machine

FILE_BROWSER_JS = "() => document.querySelector('#filebrowser')?.getBoundingClientRect().width || 0"

# every output box: its own sideways scroll, any element inside it that scrolls sideways, any that reaches past it;
# a code listing in Markdown (a hint's skeleton) is code, kept as written, and may scroll inside itself
OVERFLOW_JS = r"""() => {
    const out = [];
    for (const box of document.querySelectorAll('.jp-OutputArea-output')) {
        const right = box.getBoundingClientRect().right;
        let worst = box.scrollWidth - box.clientWidth;
        for (const el of box.querySelectorAll('*')) {
            if (el.closest('.jp-RenderedMarkdown pre')) continue;
            if (getComputedStyle(el).overflowX !== 'visible') worst = Math.max(worst, el.scrollWidth - el.clientWidth);
            const r = el.getBoundingClientRect();
            if (r.width) worst = Math.max(worst, r.right - right);
        }
        if (worst > 1) out.push(`${Math.round(worst)} px: ${box.innerText.slice(0, 80)}`);
    }
    return out;
}"""

# [line, x] of each occurrence of marker in the printed block (a <pre>) that holds needle
MARKER_JS = r"""([needle, marker]) => {
    const pre = [...document.querySelectorAll('.jp-OutputArea-output pre')].find(p => p.textContent.includes(needle));
    if (!pre) return null;
    pre.scrollIntoView({block: 'center'});
    const nodes = [], walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) nodes.push(walker.currentNode);
    const text = nodes.map(n => n.textContent).join(''), out = [];
    for (let at = text.indexOf(marker); at >= 0; at = text.indexOf(marker, at + 1)) {
        let offset = at, node = 0;
        while (offset >= nodes[node].textContent.length) offset -= nodes[node++].textContent.length;
        const range = document.createRange();
        range.setStart(nodes[node], offset);
        range.setEnd(nodes[node], offset + 1);
        const line = text.slice(text.lastIndexOf('\n', at) + 1, (text.indexOf('\n', at) + 1 || text.length + 1) - 1);
        out.push([line, range.getBoundingClientRect().left]);
    }
    return out;
}"""

# the text of every output of the first code cell after the markdown heading
OUTPUT_AFTER_JS = r"""(heading) => {
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
    const at = cells.findIndex(c => [...c.querySelectorAll('h2')].some(h => h.textContent.startsWith(heading)));
    const code = at < 0 ? null : cells.slice(at + 1).find(c => c.classList.contains('jp-CodeCell'));
    return code ? code.querySelector('.jp-Cell-outputArea').innerText : null;
}"""


def assert_file_browser_open(page):
    """JupyterLab's file browser takes its place on the left: the output area is as narrow as a learner sees it."""
    page.wait_for_function(f"() => ({FILE_BROWSER_JS})() > 100", timeout=30_000)


def overflowing_outputs(page) -> list:
    """Each output box wider inside than on the page, with by how much."""
    return page.evaluate(OVERFLOW_JS)


def assert_columns_line_up(page, needle, marker, lines=lambda line: True):
    """In the printed block holding needle, marker starts at one x on every line `lines` selects (at least two)."""
    found = page.evaluate(MARKER_JS, [needle, marker])
    assert found, f"no printed block holds {needle!r}"
    xs = [(line, round(x, 1)) for line, x in found if lines(line)]
    assert len(xs) >= 2 and max(x for _, x in xs) - min(x for _, x in xs) <= 1, (needle, marker, xs)


def output_after(page, heading) -> str:
    text = page.evaluate(OUTPUT_AFTER_JS, heading)
    assert text is not None, f"no code cell after the heading {heading!r}"
    return text


def assert_one_verdict(page, heading):
    """The code cell after the heading says one verdict on the machine, and nothing before the timing claims one."""
    lines = output_after(page, heading).splitlines()
    verdicts = [line for line in lines if machine.is_verdict(line.strip())]
    assert len(verdicts) == 1, (heading, lines)
    return verdicts[0]


def run_cells(page, *snippets):
    """Run again, in order, the code cells whose source holds each snippet; return once the kernel is idle again."""
    for snippet in snippets:
        index = page.evaluate("""(snippet) => {
            const notebook = window.jupyterapp.shell.currentWidget.content;
            const cells = notebook.model.cells;
            const at = [...Array(cells.length).keys()]
                .find(i => cells.get(i).sharedModel.getSource().includes(snippet));
            if (at === undefined) return -1;
            window.__p08_count = cells.get(at).executionCount;
            notebook.activeCellIndex = at;
            window.jupyterapp.commands.execute('notebook:run-cell');
            return at;
        }""", snippet)
        assert index >= 0, f"no code cell holds {snippet!r}"
        page.wait_for_function("""(at) => {
            const widget = window.jupyterapp.shell.currentWidget;
            const count = widget.content.model.cells.get(at).executionCount;
            return count && count !== window.__p08_count && widget.sessionContext.session.kernel.status === 'idle';
        }""", arg=index, timeout=240_000)


# the benchmark cell's learner_impl, in the kernel, as it is once mine/ works: a working FastSampler (the solution's
# file, loaded and probed as the benchmark loads mine/) under mine/'s name; the repo's mine/ is never touched
WORKING_MINE = """from course.bench import learner as _learner
_working = _learner.load({path!r})[1]
bf.learner_impl = lambda fast, lang: (("mine/p08_sampler_fast.py", _working),
                                      _learner.yours_line("mine/p08_sampler_fast.py", lang))"""


def run_in_kernel(page, code):
    """Run code in the notebook's kernel, outside any cell; wait for it to finish."""
    page.evaluate("""async (code) => {
        const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
        await kernel.requestExecute({code, store_history: false}).done;
    }""", code)


def time_a_working_mine(page, root):
    """Run the fast notebook's benchmark cell again as it runs once mine/ works: with the column 'yours'."""
    run_in_kernel(page, WORKING_MINE.format(path=str(root / "solutions" / "p08_sampler_fast.py")))
    run_cells(page, "bf.time_cases(bf.TABLE_CASES")
