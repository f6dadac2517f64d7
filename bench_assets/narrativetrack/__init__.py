"""NarrativeTrack: entity-centric QA built automatically from real videos, and video MLLMs answering it."""
