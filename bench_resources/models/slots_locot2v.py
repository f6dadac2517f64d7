"""Model slots used only by locot2v (merged into SLOTS by specs.py)."""
from __future__ import annotations

SLOTS: dict = {}
