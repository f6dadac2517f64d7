"""Model slots used only by MBench (merged into SLOTS by slots.py)."""
from __future__ import annotations

import re
from typing import Optional, Sequence

import cv2
import numpy as np

from bench_resources.models.base import counted
from bench_resources.models.checkpoint import Checkpoint, SlotSpec


# stale buffers of older exports that transformers itself ignores (its _adjust_missing_and_unexpected_keys)
IGNORED_UNEXPECTED = re.compile(r"rotary_emb\.inv_freq$|(^|\.)position_ids$")


class CheckpointMismatch(ValueError):
    """A checkpoint whose tensors do not match the architecture its config names (never run half-random weights)."""


class VideoObjectSegmenter:
    """SAM 2 / 2.1 video propagation (transformers ``Sam2VideoModel`` + ``Sam2VideoProcessor``): a box prompt on the
    first frame, masks propagated through the memory bank frame by frame (streamed: one preprocessed frame at a time,
    so a long video is never held as model inputs). ``propagate(frames, box_xyxy, keep)`` -> per frame a bool HxW
    mask (frames not in ``keep`` get None, but are still tracked through)."""

    name = "sam2_video"

    def __init__(self, model, processor, device):
        self.model, self.processor, self.device = model.eval().to(device), processor, device

    @classmethod
    def load(cls, source: str, device) -> "VideoObjectSegmenter":
        from transformers import Sam2VideoModel, Sam2VideoProcessor
        model, info = Sam2VideoModel.from_pretrained(source, output_loading_info=True)
        problems = {k: sorted(str(x) for x in (info.get(k) or [])) for k in
                    ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs")}
        # transformers 5 drops some unknown keys without reporting them (measured: anything under memory_encoder. or
        # memory_attention.), so the checkpoint's own tensor names are compared with the model's state dict as well
        extra = sorted(set(problems["unexpected_keys"]) | (cls._file_keys(source) - set(model.state_dict())))
        problems["unexpected_keys"] = [k for k in extra if not IGNORED_UNEXPECTED.search(k)]
        problems = {k: v for k, v in problems.items() if v}
        if problems:
            raise CheckpointMismatch(f"SAM 2 video checkpoint {source}: " + "; ".join(
                f"{k.replace('_', ' ')} ({len(v)}): {', '.join(v[:5])}" for k, v in problems.items()))
        return cls(model, Sam2VideoProcessor.from_pretrained(source), device)

    @staticmethod
    def _file_keys(source: str) -> set[str]:
        """Tensor names in a local checkpoint folder's safetensors files (empty for a hub id)."""
        from pathlib import Path

        from safetensors import safe_open
        keys: set[str] = set()
        folder = Path(source)
        for f in sorted(folder.glob("*.safetensors")) if folder.is_dir() else []:
            with safe_open(str(f), framework="pt") as h:
                keys |= set(h.keys())
        return keys

    def propagate(self, frames: Sequence[np.ndarray], box_xyxy: Sequence[float],
                  keep: Optional[Sequence[int]] = None) -> list[Optional[np.ndarray]]:
        import torch
        keep = set(range(len(frames))) if keep is None else set(int(k) for k in keep)
        h, w = frames[0].shape[:2]
        session = self.processor.init_video_session(inference_device=self.device, dtype=torch.float32)
        out: list[Optional[np.ndarray]] = [None] * len(frames)
        with torch.inference_mode(), counted(len(frames)):
            for k, frame in enumerate(frames):
                inputs = self.processor(images=frame, return_tensors="pt")
                if k == 0:
                    self.processor.add_inputs_to_inference_session(
                        inference_session=session, frame_idx=0, obj_ids=1,
                        input_boxes=[[[float(v) for v in box_xyxy]]], original_size=(h, w))
                res = self.model(inference_session=session, frame_idx=k, frame=inputs.pixel_values[0])
                session.processed_frames.pop(k, None)   # its features are cached / in the memory bank already
                if k in keep:
                    m = self.processor.post_process_masks([res.pred_masks], original_sizes=[[h, w]],
                                                          binarize=True)[0]
                    out[k] = np.asarray(m[0, 0].cpu().numpy(), bool)
        return out


def _classical_vo(ctx, paths):
    from bench_resources.models.world import ClassicalPose
    return ClassicalPose()


def _vggt(ctx, paths):
    from bench_resources.models.world import VggtPose
    return VggtPose.load(paths[0] if paths else None, ctx.device)


def _sam2_video(ctx, paths):
    return VideoObjectSegmenter.load(str(paths[0].parent) if paths else "facebook/sam2.1-hiera-large", ctx.device)


def _vgg16(ctx, paths):
    from bench_resources.models.world import VggGram
    return VggGram.load(paths[0], ctx.device, ctx.dtype, ctx.batch_size)


SLOTS: dict = {
    "pose": SlotSpec(
        "MBench: one camera trajectory per video (revisit pairs, epipolar, reprojection, action instruction)",
        paper=Checkpoint("VGGT-1B (facebook/VGGT-1B, vggt package): per-frame extrinsics", files=("model.pt",),
                         hub_id="facebook/VGGT-1B", load=_vggt),
        offline=Checkpoint("classical keyframe visual odometry: ORB matches, rotation / homography (decomposed) / "
                           "essential model selection with Sampson refinement, PnP on triangulated points, loop "
                           "closure; 60 deg horizontal FOV",
                           weightless=f"opencv-{cv2.__version__}-orb-keyframe-vo-v2-fov60", load=_classical_vo)),
    "object_segmenter": SlotSpec(
        "MBench: object masks per frame for geometry (masked SSIM) and texture (masked crops): SAM 2 video "
        "propagation prompted with the case's box (A) or the first-frame detection (T) on the first frame",
        paper=Checkpoint("SAM 2.1 hiera-large video propagation (transformers Sam2VideoModel + Sam2VideoProcessor)",
                         files=("config.json", "model.safetensors", "processor_config.json"),
                         hub_id="facebook/sam2.1-hiera-large", load=_sam2_video),
        offline=None),   # offline the box carried by the pose stands in (recorded per row and in the manifest)
    "style_vgg": SlotSpec(
        "MBench: VGG-16 Gram matrices (relu1_2..relu4_3, divided by C*H*W) for style consistency",
        paper=Checkpoint("torchvision VGG-16 IMAGENET1K_V1", files=("vgg16-397923af.pth",), load=_vgg16),
        offline=None),
}
