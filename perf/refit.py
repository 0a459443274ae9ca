"""`python -m perf fit`: refit the coefficients on the public fit set and store them (about three minutes)."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from perf.coefficients import COEFFICIENTS_JSON, build, coverage_by_source, feature_rows, with_coverage, write


def main(argv: Sequence[str] = ()) -> int:
    """Fit, validate (with each engine's band coverage), write coefficients.json; print the held-out errors."""
    parser = argparse.ArgumentParser(prog="python -m perf fit", description=__doc__)
    parser.add_argument("--out", type=Path, default=COEFFICIENTS_JSON, help="where to write the coefficients")
    args = parser.parse_args(list(argv))
    coefficients, checked = build(feature_rows())
    write(with_coverage(coefficients, checked, coverage_by_source(checked)), args.out)
    ape = coefficients.held_out_median_ape
    print(
        f"wrote {args.out}: held-out median APE TPOT {ape['tpot']:.1%}, output tok/s {ape['output_tok_s']:.1%}, "
        f"TTFT {ape['ttft']:.1%}",
        file=sys.stderr,
    )
    return 0
