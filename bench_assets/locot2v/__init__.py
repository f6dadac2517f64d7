"""LoCoT2V-Bench. Importing the package registers its assets' model-slot declarations (wiring.py, issue 25)."""
from bench_assets.locot2v import wiring  # noqa: F401
