"""Every metric of the entitybench board, declared once (core/metric_spec.py): the board, the site, the CLI
(`bench metrics`), validity and parity read these."""
from __future__ import annotations

from bench_assets.core.metric_spec import MetricSpec, MetricSpecs

METRICS = MetricSpecs("entitybench", [
])
