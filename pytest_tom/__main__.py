"""`python -m pytest_tom`: commands that work on stored results, outside a pytest run.

    python -m pytest_tom html report.json -o report.html

rebuilds the --tom-html page from a --tom-report file (a CI artifact, a colleague's run): the same page the run would
have written, since the page is a function of the report alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_tom", description="pytest-tom commands on stored results.")
    commands = parser.add_subparsers(dest="command", required=True)
    html = commands.add_parser("html", help="rebuild the --tom-html page from a --tom-report JSON file",
                               description="Rebuild the self-contained HTML page of a run from its JSON report.")
    html.add_argument("report", type=Path, help="a JSON report written by --tom-report")
    html.add_argument("-o", "--output", type=Path, help="the page to write (default: the report's path with .html)")
    args = parser.parse_args(argv)
    return _html(args.report, args.output or args.report.with_suffix(".html"))


def _html(report: Path, output: Path) -> int:
    from pytest_tom.errors import TomError
    from pytest_tom.output.html import MISSING, write_html
    from pytest_tom.output.html.charts import available
    from pytest_tom.output.report import load_report

    if not available():
        print(f"error: {MISSING}", file=sys.stderr)
        return 2
    try:
        raw = load_report(report).raw
        write_html(output, raw)
    except (TomError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
