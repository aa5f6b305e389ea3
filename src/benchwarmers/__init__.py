"""Benchwarmers: ask a panel of LLMs at once, judge the answers, and let the
verdicts decide who sits on the next panel."""

__version__ = "0.1.0"
