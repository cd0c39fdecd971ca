"""Build the notebooks from one source per notebook: Chinese (notebooks/*.ipynb) and English (notebooks/en/).

A source file notebooks/src/<name>.nb is a list of blocks, each opened by a marker line:
    %% md      a markdown cell in Chinese; the next block MUST be its English twin:
    %% en      the same cell in English
    %% code    a code cell, the same in both notebooks but for its strings: {{LANG}} becomes "zh" or "en", and a
               printed line t("中文", "English") (two string literals) keeps the notebook's language only
So code cells never drift between the languages, and each notebook's cells read in one language.
`python -m course.notebook.nbsource` rewrites the notebooks; `--check` exits 1 when a committed notebook differs from
its source (the self-tests check the same).
Output is canonical: no outputs, fixed ids, the JSON layout Jupyter itself writes (course/notebook/nbstrip.py keeps
a notebook saved after a run byte-identical to this).
"""
from __future__ import annotations

import ast
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


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8"))


def _without_magics(lines: list) -> str:
    """The cell's text with IPython's %magic and !shell lines made comments of the same length (Python to parse)."""
    return "".join("#" + line[1:] if line.startswith(("%", "!")) else line for line in lines)


def printed_pair(node) -> bool:
    """Is this AST node a call t("中文", "English") whose two arguments are string literals (f-strings too)?"""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "t"
            and not node.keywords and len(node.args) == 2
            and all(isinstance(arg, ast.JoinedStr) or isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    for arg in node.args))


def localize(code: str, lang: str) -> str:
    """Each t("中文", "English") call whose two arguments are string literals (f-strings too) -> the argument in
    `lang`, its continuation lines moved as far as the argument moved (never left of it); t(*pair) and the rest
    stay."""
    lines = code.splitlines(True)
    calls = [node for node in ast.walk(ast.parse(_without_magics(lines))) if printed_pair(node)]
    calls.sort(key=lambda node: (node.lineno, node.col_offset), reverse=True)    # the last first: spans stay valid
    for call in calls:
        arg = call.args[0 if lang == "zh" else 1]
        pos = [(n.lineno - 1, _char_col(lines[n.lineno - 1], n.col_offset),
                n.end_lineno - 1, _char_col(lines[n.end_lineno - 1], n.end_col_offset)) for n in (call, arg)]
        (l1, c1, l2, c2), (a1, ca1, a2, ca2) = pos
        text = "".join(lines[a1:a2 + 1])
        start, end = ca1, len(text) - len(lines[a2]) + ca2
        chosen = text[start:end].split("\n")
        shift = ca1 - c1                                 # the argument lands at c1; its other lines move as far,
        chosen = chosen[:1] + [" " * max(len(part) - len(part.lstrip(" ")) - shift, c1) + part.lstrip(" ")
                               for part in chosen[1:]]   # and never left of c1
        bare = lines[:l1] + (lines[l1][:c1] + "\n".join(chosen) + lines[l2][c2:]).splitlines(True) + lines[l2 + 1:]
        try:                                            # a multi-line argument outside brackets needs its own
            ast.parse(_without_magics(bare))
            lines = bare
        except SyntaxError:
            lines[l1:l2 + 1] = (lines[l1][:c1] + "(" + "\n ".join(chosen) + ")" + lines[l2][c2:]).splitlines(True)
    return "".join(lines)


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
            body = localize(cell[1].replace("{{LANG}}", lang), lang)
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
