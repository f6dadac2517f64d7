"""EntityMem: the small episode the pipeline tests run."""
from __future__ import annotations

from tests.support import DATA, QUIET, ROOT  # noqa: F401

EPISODE = {
    "episode_id": "t0001", "tier": "easy", "title": "The green knight", "summary": "An anime story about a knight.",
    "entities": [
        {"id": "c1", "type": "character", "name": "Verdant Knight",
         "description": "a knight with grey hair in a green coat and brown trousers"},
        {"id": "c2", "type": "character", "name": "Mara", "description": "a girl with black hair in a red dress"},
        {"id": "c3", "type": "character", "name": "Bo", "description": "a boy with blonde hair in a blue shirt"},
        {"id": "o1", "type": "object", "name": "the Cat", "description": "a small orange tabby cat"},
        {"id": "o2", "type": "object", "name": "the Hat", "description": "a tall purple hat"},
        {"id": "l1", "type": "location", "name": "the Castle", "description": "a grey stone castle on a hill"},
        {"id": "l2", "type": "location", "name": "the Forest", "description": "a dark green forest"}],
    "shots": [
        {"index": 1, "cut": True, "entities": ["c1", "c2", "o2", "l1"],
         "action": "Verdant Knight talks with Mara at the Castle."},
        {"index": 2, "cut": False, "entities": ["c1", "c2", "c3", "l1"],
         "action": "Bo enters while Verdant Knight talks with Mara at the Castle."},
        {"index": 3, "cut": True, "entities": ["c2", "o1", "o2", "l2"],
         "action": "Mara looks around, next to the Cat at the Forest."},
        {"index": 4, "cut": False, "entities": ["c2", "c1", "o1", "l2"],
         "action": "Mara talks with Verdant Knight, next to the Cat at the Forest."}]}

