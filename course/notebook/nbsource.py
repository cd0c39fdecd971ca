"""Build the notebooks from one source per notebook: Chinese (notebooks/*.ipynb) and English (notebooks/en/).

A source file notebooks/src/<name>.nb is a list of blocks, each opened by a marker line:
    %% md      a markdown cell in Chinese; the next block MUST be its English twin:
    %% en      the same cell in English
    %% code    a code cell, identical in both notebooks ({{LANG}} becomes "zh" or "en")
So code cells never drift between the languages. `python -m course.notebook.nbsource` rewrites the notebooks;
`--check` exits 1 when a committed notebook differs from its source (the self-tests check the same).
Output is canonical: no outputs, fixed ids, the JSON layout Jupyter itself writes (course/notebook/nbstrip.py keeps
a notebook saved after a run byte-identical to this).
"""
from __future__ import annotations

import sys
from pathlib import Path

from course.notebook.nbstrip import METADATA, dumps

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("zh", "en")


def source_path(notebook: Path) -> Path:
    """notebooks/p08_sampler.ipynb -> notebooks/src/p08_sampler.nb"""
    return ROOT / "notebooks" / "src" / (Path(notebook).stem + ".nb")


def parse(text: str) -> list:
    """[('md', zh, en) | ('code', source)] from a source file's text."""
    blocks, kind, lines = [], None, []
    for line in text.splitlines():
        if line.startswith("%% "):
            if kind:
                blocks.append((kind, "\n".join(lines).strip("\n")))
            kind, lines = line[3:].strip(), []
            if kind not in ("md", "en", "code"):
                raise ValueError(f"unknown block marker {line!r}")
        elif kind is None:
            if line.strip():
                raise ValueError(f"text before the first marker: {line!r}")
        else:
            lines.append(line)
    if kind:
        blocks.append((kind, "\n".join(lines).strip("\n")))
    cells, i = [], 0
    while i < len(blocks):
        kind, body = blocks[i]
        if kind == "md":
            if i + 1 >= len(blocks) or blocks[i + 1][0] != "en":
                raise ValueError(f"markdown block {len(cells)} has no English twin ('%% en' must follow '%% md')")
            cells.append(("md", body, blocks[i + 1][1]))
            i += 2
        elif kind == "code":
            cells.append(("code", body))
            i += 1
        else:
            raise ValueError(f"'%% en' block {len(cells)} does not follow a '%% md' block")
    return cells


def cell_json(kind, source, cell_id) -> dict:
    cell = {"cell_type": "markdown" if kind == "md" else "code", "id": cell_id, "metadata": {},
            "source": source.splitlines(True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def build(source_text: str, lang: str, stem: str) -> str:
    """The notebook text in `lang` for one source."""
    cells = []
    for i, cell in enumerate(parse(source_text)):
        if cell[0] == "md":
            body = cell[1] if lang == "zh" else cell[2]
        else:
            body = cell[1].replace("{{LANG}}", lang)
        cells.append(cell_json(cell[0], body, f"{stem}-{i:02d}"))
    return dumps({"cells": cells, "metadata": METADATA, "nbformat": 4, "nbformat_minor": 5})


def targets() -> list:
    """[(source path, lang, notebook path)] for every problem's Chinese and English notebook."""
    from course.problems import problems
    out = []
    for problem in problems().values():
        src = source_path(problem.notebook)
        out.append((src, "zh", problem.path("notebook")))
        if problem.notebook_en:
            out.append((src, "en", problem.path("notebook_en")))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    stale = []
    for src, lang, path in targets():
        text = build(src.read_text(encoding="utf-8"), lang, Path(path).stem)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if "--check" not in argv:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(("out of date: " if "--check" in argv else "wrote ") + str(path.relative_to(ROOT)))
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main())
