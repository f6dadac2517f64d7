"""Generation backends as resources (EntityMem, bench_assets/entitymem/): a text-to-image generator, a chroma-key
segmenter and a video backbone, each with an offline stand-in (offline.py) and swappable by configuration."""
from bench_resources.generation.images import GenerationError, ImageGenerator  # noqa: F401
from bench_resources.generation.segmentation import Segmenter  # noqa: F401
from bench_resources.generation.video import VideoBackbone  # noqa: F401
