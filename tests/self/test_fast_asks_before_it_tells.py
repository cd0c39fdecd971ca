"""p08-fast asks before it tells: the prose a learner reads before any hint (the stub, README.md, the notebook's
markdown in both languages, the docstrings and comments of the given code the stub imports) holds no step's answer,
and hint L2 or L3 holds each one, in each language."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ANSWERS = {   # an idea's answer, as the hints word it in either language
    "step 2's tie order": r"ascending\s+(token\s+)?id|id\s*升序",
    "step 3's fixed-point units": r"62 - |bit_length|fixed.point|定点",
    "step 4's top-k certainty test": r"z\.gather\(1,\s*top_k\)|kth\s*>|第\s*k\s*大的值\s*>",
    "step 4's top-p certainty test": r"last\s+kept\s+value|最后一个保留值|最后保留的值",
    "step 5's stream state": r"key\s+and\s+a\s+count|key\s*加一个计数",
}
GIVEN = ["mine/p08_sampler_fast.py", "README.md", "course/fast_batch.py", "course/streams.py"]
NOTEBOOKS = ["notebooks/p08_fast_path.ipynb", "notebooks/en/p08_fast_path.ipynb"]


def _markdown(path):
    cells = json.loads((ROOT / path).read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")


def _prose():
    yield from ((path, (ROOT / path).read_text(encoding="utf-8")) for path in GIVEN)
    yield from ((path, _markdown(path)) for path in NOTEBOOKS)


@pytest.mark.parametrize("idea", ANSWERS)
def test_the_prose_before_the_hints_does_not_give_the_answer(idea):
    told = [f"{path}: {m.group(0)!r}" for path, text in _prose() for m in [re.search(ANSWERS[idea], text)] if m]
    assert not told, f"{idea} is stated before any hint: {told}"


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("idea", ANSWERS)
def test_the_hints_hold_each_answer(idea, lang):
    folder = ROOT / "hints" / "p08-fast" / ("" if lang == "zh" else "en")
    hints = "\n".join((folder / f"L{level}.md").read_text(encoding="utf-8") for level in (2, 3))
    assert re.search(ANSWERS[idea], hints), f"hints L2-L3 ({lang}) do not give {idea}"
