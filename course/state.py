"""The learner's progress (last grade, hints revealed) in one small gitignored JSON file."""
from __future__ import annotations

import json
import os
import time

from course.problems import ROOT


def path():
    return os.environ.get("COURSE_STATE") or str(ROOT / ".course_state.json")


def load() -> dict:
    try:
        with open(path(), encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(data: dict) -> None:
    tmp = f"{path()}.{os.getpid()}.tmp"                  # one per process: two writers never share it
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
    os.replace(tmp, path())


def problem_state(problem: str) -> dict:
    return load().get(problem, {})


def record_grade(problem: str, passed: int, total: int, device: str) -> None:
    data = load()
    data.setdefault(problem, {})["grade"] = {"passed": passed, "total": total, "device": device,
                                             "when": time.strftime("%Y-%m-%d %H:%M")}
    _save(data)


def record_hint(problem: str, level: int) -> None:
    data = load()
    seen = set(data.setdefault(problem, {}).get("hints_seen", []))
    data[problem]["hints_seen"] = sorted(seen | {level})
    _save(data)


def language() -> str:
    """The learner's language: COURSE_LANG if set, else the one saved by `./check.sh lang`, else Chinese."""
    chosen = os.environ.get("COURSE_LANG") or load().get("_settings", {}).get("lang", "zh")
    return chosen if chosen in ("zh", "en") else "zh"


def set_language(lang: str) -> None:
    data = load()
    data.setdefault("_settings", {})["lang"] = lang
    _save(data)
