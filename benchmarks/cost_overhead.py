"""What costing a call adds to its end, in-process: `calls/cost.call_cost`
(the one pure function, from the price the model view holds in memory) and
a panel's total (`Total.of`), in nanoseconds of CPU per call, beside the
CPU a whole request costs the gateway (docs/benchmarks.md: about 1.7-2.3 ms
per passthrough or one-seat panel request). No I/O, no store: a cost is
arithmetic on a price already in memory.

    .venv/bin/python benchmarks/cost_overhead.py [--calls 1000000]
"""

from __future__ import annotations

import argparse
import time

from benchwarmers.calls.cost import Total, call_cost
from benchwarmers.types import Usage


def per_call_ns(calls: int, work: object) -> float:
    assert callable(work)
    started = time.process_time_ns()
    for _ in range(calls):
        work()
    return (time.process_time_ns() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    args = parser.parse_args()
    usage = Usage(1200, 350, 400)
    loop = per_call_ns(args.calls, lambda: None)
    rows = {
        "call_cost, priced (with cached input)": per_call_ns(
            args.calls, lambda: call_cost(usage, 3.0, 15.0, 0.3)
        ),
        "call_cost, price unknown": per_call_ns(args.calls, lambda: call_cost(usage, None, None)),
        "Total.of, a 3-seat panel and a merge": per_call_ns(
            args.calls // 4, lambda: Total.of((0.01, 0.002, None, 0.004))
        ),
    }
    print(f"{'what':<42} {'ns CPU (loop subtracted)':>26}")
    for what, ns in rows.items():
        print(f"{what:<42} {ns - loop:>26.0f}")


if __name__ == "__main__":
    main()
