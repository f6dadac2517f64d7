"""Model slots used only by narrativetrack (merged into SLOTS by specs.py)."""
from __future__ import annotations

SLOTS: dict = {}
