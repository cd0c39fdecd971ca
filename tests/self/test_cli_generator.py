"""torch.Generator() without device= passes on the CPU and fails on a GPU: the report says so in one line, read from
the learner's source; a generator given its device (by keyword or by position) is not flagged."""
from pathlib import Path

import pytest

from course.cli import cpu_only_generators
from tests.self.helpers import check_sh

HOSTILE = Path(__file__).parent / "hostile"
FILE = HOSTILE / "generator_without_device.py"
LINES = [n for n, text in enumerate(FILE.read_text().splitlines(), 1) if "= torch.Generator()" in text]


@pytest.mark.parametrize("lang,warning", [
    ("en", "creates torch.Generator() without device=: it passes on the CPU but fails on a GPU"),
    ("zh", "创建 torch.Generator() 时没有给 device=：在 CPU 上能通过，在 GPU 上会出错")])
def test_a_generator_without_device_passes_on_the_cpu_with_a_one_line_warning(lang, warning):
    code, out, _ = check_sh("p08", "--impl", str(FILE), "--lang", lang, "--device", "cpu", "--only", "I5,E3")
    assert code == 0 and "✗" not in out, out
    warned = [line for line in out.splitlines() if warning in line]
    assert len(warned) == 1, out
    assert all(f"tests/self/hostile/generator_without_device.py:{n}" in warned[0] for n in LINES) and len(LINES) == 2


def test_no_warning_for_a_generator_on_its_device(tmp_path):
    code, out, _ = check_sh("p08", "--solution", "--lang", "en", "--only", "I5")
    assert code == 0 and "torch.Generator()" not in out, out


@pytest.mark.parametrize("source,flagged", [
    ("g = torch.Generator()", [1]),
    ("g = torch.Generator().manual_seed(3)", [1]),
    ("from torch import Generator\ng = Generator()", [2]),
    ("g = torch.Generator(device=logits.device)", []),
    ("g = torch.Generator(logits.device)", []),
    ("g = torch.Generator(device='cpu')", []),
    ("g = torch.Generator(**kw)", []),
    ("g = np.random.Generator(bits)", []),
    ("def f(:\n    torch.Generator()", []),                # does not parse: the import error says so instead
])
def test_the_source_check_flags_only_a_generator_with_no_device(tmp_path, source, flagged):
    path = tmp_path / "attempt.py"
    path.write_text(source + "\n")
    assert cpu_only_generators(path) == flagged
