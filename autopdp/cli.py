"""The ``autopdp`` command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ._io import atomic_write_text

__all__ = ["main"]


class UsageError(Exception):
    """Bad input from the user: exit code 2 with a one-line message."""


def _summarise(results) -> str:
    lines = []
    one = [r for r in results if r.ndim == 1]
    two = [r for r in results if r.ndim == 2]
    lines.append(f"{len(one)} 1D and {len(two)} 2D partial dependences computed (target {one[0].targets[0]!r}).")
    lines.append("1D partial dependence range (max - min of the average prediction):")
    ranked = sorted(one, key=lambda r: float(r.average[0].max() - r.average[0].min()), reverse=True)
    for r in ranked:
        span = float(r.average[0].max() - r.average[0].min())
        lines.append(f"  {r.features[0]:<26} {r.kinds[0]:<12} {span:8.4f}  ({r.grid_shape[0]} grid points)")
    return "\n".join(lines)


def _cmd_demo(args) -> int:
    from .demo import demo_model
    from .partial_dependence import compute_all

    out = Path(args.out)
    t0 = time.perf_counter()
    model, X, y = demo_model()
    results = compute_all(model, X, grid_resolution=20, grid_resolution_2d=10, n_jobs=args.n_jobs)
    elapsed = time.perf_counter() - t0
    print(_summarise(results))
    payload = {"dataset": "German Credit (UCI, CC BY 4.0)", "results": [r.to_dict() for r in results]}
    path = out / "results.json"
    atomic_write_text(path, json.dumps(payload, allow_nan=False))
    print(f"autopdp demo: wrote {path} in {elapsed:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autopdp", description="Curated partial-dependence validation reports.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="run on the embedded German Credit demo")
    demo.add_argument("--out", default="autopdp-demo", help="output directory (default: autopdp-demo)")
    demo.add_argument("--n-jobs", type=int, default=None, help="parallel workers (default: 1)")
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from . import __version__

        print(f"autopdp {__version__}")
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (UsageError, ValueError, TypeError, OSError) as exc:
        print(f"autopdp: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
