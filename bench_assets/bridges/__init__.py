"""Assets that combine two benchmarks (above the benchmark folders, below benchmarks.py): a benchmark folder never
imports another, so what needs both lives here."""
