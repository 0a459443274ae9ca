"""`python -m perf fit`: refit the coefficients on the public fit set and store them (about three minutes)."""

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from perf.coefficients import COEFFICIENTS_JSON, build, coverage_by_source, feature_rows, with_coverage, write


def main(argv: Sequence[str] = ()) -> int:
    """Fit, validate (with each engine's band coverage), write coefficients.json; print the held-out errors."""
    parser = argparse.ArgumentParser(prog="python -m perf fit", description=__doc__)
    parser.add_argument("--out", type=Path, default=COEFFICIENTS_JSON, help="where to write the coefficients")
    args = parser.parse_args(list(argv))
    coefficients, checked = build(feature_rows())
    write(with_coverage(coefficients, checked, coverage_by_source(checked)), args.out)
    print(f"wrote {args.out}: {summary(coefficients.held_out_median_ape)}", file=sys.stderr)
    return 0


def summary(ape: Mapping[str, float]) -> str:
    """The held-out median errors as the docs lead with them: by source first, then by (model, GPU, engine) group."""
    return (
        f"held-out median APE by source: TPOT {ape['tpot_by_source']:.1%}, output tok/s "
        f"{ape['output_tok_s_by_source']:.1%}, TTFT {ape['ttft_by_source']:.1%} (by group: TPOT {ape['tpot']:.1%}, "
        f"output tok/s {ape['output_tok_s']:.1%}, TTFT {ape['ttft']:.1%})"
    )
