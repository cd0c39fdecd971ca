"""Which printed lines are English prose: the measure behind "the Chinese notebooks speak Chinese".

A line is English prose when it holds no Chinese character and at least ENGLISH_WORDS (two) English words. A word is
a whitespace-separated token that, stripped of the punctuation around it, is made of ASCII letters only (an inner
hyphen or apostrophe allowed), at least two of them, and is not code: a token with `_`, `.`, `/`, `(`, `[`, `=`,
`<`, `>` or a digit inside (`top_k`, `torch.float32`, `argmax(row)`, `fp32`), a CamelCase or ALL-CAPS name
(`FastSampler`, `WINDOW`), a printed value (True, None, inf, nan), or one of the TERMS the Chinese prose itself writes in English (token, logits, batch,
seed, ...). Numbers, shapes and reprs therefore never make a line English; "caller's tensor untouched" does.

The browser test (tests/self/test_browser.py) and the notebook test (tests/self/test_notebooks.py) both count with
english_share, one on the page, one on the executed notebook's outputs.
"""
import re

ENGLISH_WORDS = 2                 # "several": two are enough to read as a phrase
MAX_ENGLISH_SHARE = 0.20
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
WORD = re.compile(r"[A-Za-z][a-z]*(?:['’-][A-Za-z][a-z]*)*")           # CamelCase and ALL-CAPS do not match
CODE_MARK = re.compile(r"[_./(\[=<>0-9]")
EDGE = "\"'`‘’“”,;:!?()[]{}<>·…-–—→*"
LITERALS = frozenset("true false none inf nan".split())             # printed values, not words
TERMS = frozenset("""token tokens logit logits batch batches seed seeds softmax cumsum argmax greedy top-k top-p
    penalty temperature sampler generator multinomial topk mix step steps fp bf cpu cuda gpu ms certain""".split())


def is_code(token: str) -> bool:
    """A token that reads as code or a number, never as an English word."""
    inner = token.strip(EDGE)
    if not inner or CODE_MARK.search(inner):
        return True
    if inner.lower() in TERMS or inner.lower() in LITERALS:
        return True
    return not WORD.fullmatch(inner) or sum(c.isalpha() for c in inner) < 2           # FastSampler, WINDOW, x


def english_words(line: str) -> list:
    """The English words of a line (code identifiers, numbers and glossary terms left out)."""
    return [token.strip(EDGE) for token in line.split() if not is_code(token)]


def is_english_prose(line: str) -> bool:
    """No Chinese character and at least ENGLISH_WORDS English words."""
    return not CJK.search(line) and len(english_words(line)) >= ENGLISH_WORDS


def printed_lines(text: str) -> list:
    """The non-blank lines of printed output."""
    return [line for line in text.splitlines() if line.strip()]


def english_share(lines) -> tuple:
    """(english prose lines, all non-blank lines, share) for an iterable of printed lines."""
    lines = [line for line in lines if line.strip()]
    english = [line for line in lines if is_english_prose(line)]
    return english, lines, (len(english) / len(lines) if lines else 0.0)


def notebook_printed_lines(nb) -> list:
    """Every non-blank line a notebook's code cells printed (stdout streams), in order."""
    return [line for cell in nb["cells"] if cell["cell_type"] == "code" for out in cell.get("outputs", [])
            if out.get("output_type") == "stream" and out.get("name") == "stdout"
            for line in printed_lines("".join(out["text"]) if isinstance(out["text"], list) else out["text"])]
