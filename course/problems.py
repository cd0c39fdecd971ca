"""Problem metadata from course.toml: the single place that says what each problem is made of."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Problem:
    name: str
    title_zh: str
    title_en: str
    stub: str
    solution: str
    sampler_class: str
    functions: tuple
    checks: tuple
    notebook: str
    hints: str
    todo_tag: str
    timeout_s: float
    next_zh: str
    next_en: str
    notebook_en: str = ""   # the English notebook (built from the same source as `notebook`)

    def title(self, lang: str) -> str:
        return self.title_zh if lang == "zh" else self.title_en

    def next_step(self, lang: str) -> str:
        return self.next_zh if lang == "zh" else self.next_en

    def path(self, which: str) -> Path:
        """Absolute path of 'stub', 'solution', 'notebook', 'notebook_en' or 'hints'."""
        return ROOT / getattr(self, which)


@lru_cache(maxsize=None)
def problems() -> dict:
    data = tomllib.loads((ROOT / "course.toml").read_text(encoding="utf-8"))
    out = {}
    for name, entry in data["problems"].items():
        entry = dict(entry, functions=tuple(entry["functions"]), checks=tuple(entry["checks"]))
        out[name] = Problem(name=name, **entry)
    return out


def get(name: str) -> Problem:
    try:
        return problems()[name]
    except KeyError:
        raise KeyError(f"unknown problem {name!r}; known: {', '.join(problems())}") from None
