"""`python -m perf fit`: refit the coefficients on the public fit set and store them (about half a minute)."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from perf.coefficients import COEFFICIENTS_JSON, build, feature_rows, write


def main(argv: Sequence[str] = ()) -> int:
    """Fit, validate, write coefficients.json; print the held-out errors."""
    parser = argparse.ArgumentParser(prog="python -m perf fit", description=__doc__)
    parser.add_argument("--out", type=Path, default=COEFFICIENTS_JSON, help="where to write the coefficients")
    args = parser.parse_args(list(argv))
    coefficients, _ = build(feature_rows())
    write(coefficients, args.out)
    ape = coefficients.held_out_median_ape
    print(
        f"wrote {args.out}: held-out median APE TPOT {ape['tpot']:.1%}, output tok/s {ape['output_tok_s']:.1%}, "
        f"TTFT {ape['ttft']:.1%}",
        file=sys.stderr,
    )
    return 0
