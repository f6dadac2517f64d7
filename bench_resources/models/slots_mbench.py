"""Model slots used only by MBench (merged into SLOTS by specs.py)."""
from __future__ import annotations

import cv2

from bench_resources.models.specs import Checkpoint, SlotSpec


def _classical_vo(ctx, paths):
    from bench_resources.models.world import ClassicalPose
    return ClassicalPose()


def _vggt(ctx, paths):
    from bench_resources.models.world import VggtPose
    return VggtPose.load(paths[0] if paths else None, ctx.device)


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
    "style_vgg": SlotSpec(
        "MBench: VGG-16 Gram matrices (relu1_2..relu4_3, divided by C*H*W) for style consistency",
        paper=Checkpoint("torchvision VGG-16 IMAGENET1K_V1", files=("vgg16-397923af.pth",), load=_vgg16),
        offline=None),
}
