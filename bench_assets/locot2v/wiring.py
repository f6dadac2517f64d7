"""LoCoT2V's asset wiring beside assets.py: the model slots each asset loads (issue 25, core/slots.py). A weights
change re-runs exactly the assets that load its slot (and what reads them). Registered on import of the package
(``__init__``), so the declarations exist wherever the assets do."""
from bench_assets.core.slots import declare_slots

# locot2v_visual loads every slot of assets.SLOTS but the long-text embedder, which locot2v_judged loads
# (tests/test_incremental_slots.py checks the two against assets.SLOTS)
VISUAL_SLOTS = ("aesthetic_v25", "dover", "flow", "interpolator", "siglip2", "image_embedder", "subject_segmenter",
                "open_vocab_detector", "clip_b32", "face")
JUDGED_SLOTS = ("long_text_embedder",)

declare_slots({"locot2v_visual": VISUAL_SLOTS, "locot2v_judged": JUDGED_SLOTS,
               "locot2v_leaderboard": VISUAL_SLOTS + JUDGED_SLOTS})
