"""Everything pytest-tom writes: the terminal summary, the JSON report, Markdown and the rendering of typed metrics
(`render`, so a benchmark declares what it measures and never formats it). Nothing in the run or the benchmarks imports
these modules except to write output.
"""
