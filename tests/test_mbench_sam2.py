"""MBench's object_segmenter slot (SAM 2 video propagation, transformers): the real loading code on a randomly
initialised tiny checkpoint (CPU, seconds), strict loading, and the pipeline using the slot's masks instead of the
box carried by the pose when the slot is available."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from bench_assets.mbench import dataset as D
from bench_assets.mbench import pipeline as PL
from bench_assets.mbench import scoring as SC
from bench_assets.mbench import tracking as TR
from bench_resources.device import Device
from bench_resources.models import ModelRegistry
from bench_resources.models.slots_mbench import CheckpointMismatch, VideoObjectSegmenter

S = 128   # model input size of the tiny checkpoint


def tiny_sam2_video(path):
    """A SAM 2 video model with a 5-block hiera, one memory-attention layer and 128 px inputs, saved with its
    processor as a checkpoint folder."""
    from transformers import Sam2VideoConfig, Sam2VideoModel, Sam2VideoProcessor
    from transformers.models.sam2.image_processing_sam2 import Sam2ImageProcessor
    from transformers.models.sam2_video.video_processing_sam2_video import Sam2VideoVideoProcessor
    backbone = dict(model_type="sam2_hiera_det_model", hidden_size=16, num_attention_heads=1,
                    blocks_per_stage=[1, 1, 2, 1], embed_dim_per_stage=[16, 32, 64, 128],
                    num_attention_heads_per_stage=[1, 1, 1, 1], window_size_per_stage=[4, 4, 4, 4],
                    global_attention_blocks=[3], image_size=[S, S], window_positional_embedding_background_size=[2, 2])
    vision = dict(model_type="sam2_vision_model", backbone_config=backbone, backbone_channel_list=[128, 64, 32, 16],
                  backbone_feature_sizes=[[S // 4, S // 4], [S // 8, S // 8], [S // 16, S // 16]], fpn_hidden_size=128)
    # memory_encoder_output_channels stays 64 (the memory cross-attention's key width is fixed at 64) and below the
    # hidden size (object pointers are split into memory-width tokens), as in the released checkpoints
    cfg = Sam2VideoConfig(
        vision_config=vision, prompt_encoder_config=dict(hidden_size=128, image_size=S, patch_size=16),
        mask_decoder_config=dict(hidden_size=128, mlp_dim=64, num_hidden_layers=1, num_attention_heads=2,
                                 iou_head_hidden_dim=32),
        image_size=S, num_maskmem=3, memory_attention_hidden_size=128, memory_attention_num_layers=1,
        memory_attention_feed_forward_hidden_size=64, memory_attention_rope_feat_sizes=[S // 16, S // 16],
        memory_encoder_hidden_size=128, memory_encoder_output_channels=64, mask_downsampler_embed_dim=128,
        memory_fuser_embed_dim=128, memory_fuser_intermediate_dim=64)
    torch.manual_seed(0)
    model = Sam2VideoModel(cfg).eval()
    model.save_pretrained(path)
    Sam2VideoProcessor(image_processor=Sam2ImageProcessor(size={"height": S, "width": S},
                                                          mask_size={"height": S // 4, "width": S // 4}),
                       video_processor=Sam2VideoVideoProcessor(size={"height": S, "width": S})).save_pretrained(path)
    return model


def frames_with_square(n=5, h=90, w=120):
    out = []
    for k in range(n):
        f = np.full((h, w, 3), 40, np.uint8)
        f[20:50, 10 + 5 * k:50 + 5 * k] = (200, 60, 60)
        out.append(f)
    return out


def test_registry_loads_sam2_video_and_propagates_a_box(tmp_path):
    src = tmp_path / "sam2"
    tiny_sam2_video(src)
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "weights"))
    assert not reg.status("object_segmenter").available
    st = reg.import_weights("object_segmenter", src)
    assert st.available and "Sam2VideoModel" in st.checkpoint
    seg = reg.slot("object_segmenter", Device(device="cpu"))
    assert isinstance(seg, VideoObjectSegmenter)
    frames = frames_with_square()
    masks = seg.propagate(frames, (10, 20, 50, 50), keep=[0, 2, 4])
    assert len(masks) == 5 and masks[1] is None and masks[3] is None
    for k in (0, 2, 4):
        assert masks[k].shape == (90, 120) and masks[k].dtype == bool


def test_a_checkpoint_with_a_missing_or_unexpected_key_fails_loudly(tmp_path):
    from safetensors.torch import load_file, save_file
    src = tmp_path / "sam2"
    tiny_sam2_video(src)
    sd = load_file(str(src / "model.safetensors"))
    dropped = sorted(k for k in sd if "mask_decoder" in k)[0]
    sd.pop(dropped)
    save_file(sd, str(src / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(CheckpointMismatch, match="missing keys.*" + dropped.split(".")[-1]):
        VideoObjectSegmenter.load(str(src), "cpu")
    for extra in ("mask_decoder.extra_head.weight", "memory_encoder.extra_head.weight"):   # the second one
        tiny_sam2_video(src)                                  # transformers itself drops without a word
        sd = load_file(str(src / "model.safetensors"))
        sd[extra] = torch.zeros(2, 2)
        save_file(sd, str(src / "model.safetensors"), metadata={"format": "pt"})
        with pytest.raises(CheckpointMismatch, match="unexpected keys.*" + extra.replace(".", r"\.")):
            VideoObjectSegmenter.load(str(src), "cpu")


# ------------------------------------------------------------------ the pipeline uses the slot's masks

class HalfSegmenter:
    """The slot's interface; the mask follows the red square in each frame (so it varies per frame) and keeps only
    its left or right half."""
    name = "fake_half"

    def __init__(self, half: str):
        self.half, self.calls = half, []

    def propagate(self, frames, box_xyxy, keep=None):
        self.calls.append((len(frames), tuple(box_xyxy)))
        out = []
        for k, f in enumerate(frames):
            red = (f[..., 0] > 150) & (f[..., 1] < 100)
            ys, xs = np.nonzero(red)
            m = np.zeros(red.shape, bool)
            mid = (xs.min() + xs.max()) // 2
            if self.half == "left":
                m[ys.min():ys.max() + 1, xs.min():mid] = True
            else:
                m[ys.min():ys.max() + 1, mid:xs.max() + 1] = True
            out.append(m if keep is None or k in keep else None)
        return out


class Models:
    """A registry whose object_segmenter slot is a given object (or unavailable); the open-vocabulary detector is
    never needed here (A-mode boxes)."""

    def __init__(self, seg):
        self.seg = seg

    def slot_or_reason(self, name, device=None):
        if name == "object_segmenter":
            return (self.seg, None) if self.seg is not None else (None, "slot 'object_segmenter' unavailable")
        if name == "image_embedder":
            return Embedder(), None
        return None, f"slot {name!r} not in this test"

    def status(self, name):
        raise AssertionError("not used")


class Embedder:
    def embed(self, crops):
        return np.stack([np.asarray(c, float).reshape(-1, 3).mean(0) + 1e-3 for c in crops])


def textured(h, w, seed, top=120):
    return np.random.RandomState(seed).randint(0, top, (h, w, 3)).astype(np.uint8)


def test_geometry_uses_the_segmenter_masks_instead_of_the_box():
    """A static camera over a textured object whose right half is repainted between the departure and the return:
    masks on the left half give a high masked SSIM, masks on the right half a low one, and the pose box (both
    halves) lies between. Rows record which masks were used."""
    h, w = 96, 128
    base = textured(h, w, 0)
    base[30:70, 30:90] = (220, 50, 50)                   # the red object ...
    base[30:70, 30:90, 2] = textured(40, 60, 1, 255)[..., 2]  # ... with texture of its own (blue channel)
    changed = base.copy()
    changed[30:70, 60:90, 2] = textured(40, 30, 2, 255)[..., 2]   # its right half repainted while unseen
    frames = [base.copy() for _ in range(6)] + [changed.copy() for _ in range(6)]
    Rs, C = [np.eye(3)] * 12, np.zeros((12, 3))
    case = D.parse_case({"case_id": "o1", "subset": "object", "mode": "A", "caption": "x", "segments": [],
                         "actions": [{"phase": "exit", "action": "wait", "frames": 11}],
                         "target": {"name": "the red box", "bbox": [60, 50, 60, 40]}}, "test")
    pairs = [(0, 11), (1, 10)]
    dev = Device(device="cpu")
    values, sources = {}, {}
    for name, seg in (("left", HalfSegmenter("left")), ("right", HalfSegmenter("right")), ("box", None)):
        rows = TR.track_rows(case, frames, Rs, Models(seg), dev, C=C)
        objects = [r for r in rows if r["kind"] == "object"]
        assert len(objects) == 12
        sources[name] = {r["mask_source"] for r in objects}
        tracks = pd.DataFrame(rows)
        out = {r["metric_id"]: r for r in SC.case_scores("g", case, frames, Rs, C, pairs, Models(seg), dev, None,
                                                         tracks)}
        values[name] = out["geometry"]["value"]
        assert json.loads(out["geometry"]["detail"])["mask_source"] == sources[name].pop()
        if seg is not None:
            assert seg.calls and seg.calls[0][0] == 12   # propagated over the video, prompted once
    assert values["left"] > 0.9 and values["right"] < 0.6, values
    assert values["right"] < values["box"] < values["left"], values


def test_mask_encoding_round_trips():
    m = np.zeros((33, 47), bool)
    m[5:20, 7:30] = True
    m[25, 40] = True
    assert np.array_equal(PL.decode_mask(PL.encode_mask(m)), m)
    assert PL.mask_box(m) == (7.0, 5.0, 41.0, 26.0)
    assert PL.mask_box(np.zeros((4, 4), bool)) is None
