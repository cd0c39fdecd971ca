"""Learner-facing text in two languages: Chinese (the course's default) and English."""
LANGS = ("zh", "en")


def pick(lang: str, zh: str, en: str) -> str:
    """The text for lang: zh unless lang is 'en'."""
    return en if lang == "en" else zh
