"""Everything pytest-tom writes: the terminal summary, the JSON report, Markdown and the rendering of typed metrics. One
renderer (`render`) turns a benchmark's `Metric`s into terminal lines, the report's `metrics` object and Markdown rows,
so a benchmark declares what it measures and never formats it. The modules here read results; nothing in the run or the
benchmarks imports them except to write output.
"""
