"""What test modules share: builders, fake servers and the session-scoped worlds (``tests/support/worlds.py``).
Test modules import from here, never from one another, so a shared builder has one home and a shared world is built
once per session."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
# Dagster's console logger at WARNING: a run's INFO lines are not what a test reads
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
