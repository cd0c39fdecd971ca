"""What the report knows of a check: its id, titles and hint. Torch-free, so check.sh's own process can show a
check the worker describes without importing the checks (course/grader/checks.py's Check adds the function)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from course.lang import pick


class Hint(NamedTuple):
    """Where to look when a check fails: hints/<problem>/L<level>.md, the anchor <a id="anchor">."""
    problem: str
    level: int
    anchor: str


@dataclass
class CheckInfo:
    id: str
    title_zh: str
    title_en: str
    hint: Hint | None = None

    @property
    def family(self) -> str:
        """E2 for E2.top_p: the checks of one family live in one module and are reported together."""
        return self.id.split(".")[0]

    def title(self, lang: str) -> str:
        return f"{self.family} {pick(lang, self.title_zh, self.title_en)}"
