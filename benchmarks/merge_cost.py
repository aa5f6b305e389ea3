"""What the merger's report costs: the input tokens of the merge's two
calls (its streamed answer, and its structured report beside it) against
the answer's call alone, by the gateway's own estimate (`calls/tokens.py`),
for panels of a few sizes. No model is called.

    .venv/bin/python benchmarks/merge_cost.py
"""

import random

from benchwarmers.calls.tokens import prompt_tokens
from benchwarmers.panel.merge import anonymise, merge_request
from benchwarmers.panel.report import report_request
from benchwarmers.types import Request, Seat, user

rng = random.Random(1)
print("| panel | answer call in (tokens) | report call in (tokens) | both / answer alone |")
print("|---|---:|---:|---:|")
words = ["the", "sky", "looks", "blue", "because", "air", "scatters"]
words += ["short", "wavelengths", "more", "than", "long", "ones", "so"]
for n, length in ((3, 150), (3, 400), (5, 400)):
    seats = [
        Seat(
            f"c{i}",
            f"Seat {i}",
            f"m{i}",
            "ok",
            1.0,
            content=" ".join(rng.choice(words) for _ in range(length)),
        )
        for i in range(n)
    ]
    an = anonymise(seats, rng)
    q = Request((user("Why is the sky blue? Explain briefly."),))
    a, r = prompt_tokens(merge_request(q, an)), prompt_tokens(report_request(q, an))
    print(f"| {n} seats x {length} words | {a} | {r} | {(a + r) / a:.2f} |")
