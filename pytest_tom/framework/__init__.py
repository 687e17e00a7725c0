"""The benchmark framework: what every benchmark declares and the shared steps it relies on. `base` (the `Benchmark`
contract, options, the facet table), `checks` (release and record checks), `metric` (typed metrics). Benchmarks under
`pytest_tom.evals` import from here; nothing here imports a benchmark.
"""
