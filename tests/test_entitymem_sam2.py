"""EntityMem's segmenter with SAM 2 refinement: the per-type prompts built from the chroma mask (a pure function:
a character's points at head, torso and legs, an object's at the deepest point of each piece, the backdrop's
corners negative), and a tiny randomly initialised SAM 2 image model of the real classes, saved as a checkpoint
folder and loaded from it, that receives them and answers a mask of the image's size; missing weights are an
error, not a silent chroma-only cut-out."""
from __future__ import annotations

import numpy as np
import pytest

from bench_resources.generation import GenerationError, Segmenter
from bench_resources.generation.offline import CHROMA
from bench_resources.generation.segmentation import chroma_mask, sam2_prompts

S = 128


def _split_figure() -> np.ndarray:
    """A figure on the green key whose green coat went with the backdrop: head and legs apart."""
    img = np.empty((120, 60, 3), np.uint8)
    img[:] = CHROMA["green"]
    img[10:30, 22:38] = (230, 190, 160)      # head
    img[30:70, 14:46] = CHROMA["green"]      # the coat: keyed out
    img[70:110, 18:42] = (60, 60, 140)       # legs
    return img


def test_a_characters_points_fall_on_head_and_legs_and_the_corners_on_the_backdrop():
    img = _split_figure()
    mask = chroma_mask(img, "green")
    p = sam2_prompts(mask, "character")
    assert p["box"] == [18, 10, 42, 110]                       # around both pieces
    pos = [pt for pt, lab in zip(p["points"], p["labels"]) if lab == 1]
    neg = [pt for pt, lab in zip(p["points"], p["labels"]) if lab == 0]
    assert all(mask[y, x] for x, y in pos) and all(not mask[y, x] for x, y in neg) and len(neg) == 4
    ys = [y for _, y in pos]
    assert min(ys) < 30 and max(ys) >= 70                      # the head and the legs: one figure for SAM 2
    assert len(pos) == 2                                       # the torso row is empty (the coat went with the key)
    whole = img.copy()
    whole[30:70, 14:46] = (150, 40, 40)
    assert sum(sam2_prompts(chroma_mask(whole, "green"), "character")["labels"]) == 3   # head, torso, legs


def test_an_objects_points_sit_inside_each_sizeable_piece():
    mask = np.zeros((80, 80), bool)
    mask[10:40, 10:30] = True     # two pieces of one object (a handle keyed out between them)
    mask[50:70, 40:75] = True
    mask[77:80, 0:3] = True       # a speck on a corner: no point of its own, and that corner is no backdrop
    p = sam2_prompts(mask, "object")
    pos = [pt for pt, lab in zip(p["points"], p["labels"]) if lab == 1]
    assert len(pos) == 2 and all(mask[y, x] for x, y in pos)
    assert {(10 <= x < 30 and 10 <= y < 40) for x, y in pos} == {True, False}   # one in each piece
    assert sam2_prompts(mask, None)["labels"] == [0, 0, 0]    # unknown type: box and backdrop corners only
    with pytest.raises(ValueError, match="location"):
        sam2_prompts(mask, "location")
    with pytest.raises(ValueError, match="no foreground"):
        sam2_prompts(np.zeros((8, 8), bool), "object")


def test_sam2_without_weights_is_an_error_naming_the_folder(tmp_path):
    seg = Segmenter(backend="chroma+sam2", weights_dir=str(tmp_path / "sam2-missing"))
    with pytest.raises(GenerationError, match="SAM 2 weights folder .*sam2-missing"):
        seg.segment(_split_figure(), "green", "character")
    assert Segmenter().segment(_split_figure(), "green", "character").shape == (120, 60, 4)   # chroma needs none


@pytest.fixture(scope="module")
def tiny_sam2(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch
    from transformers import Sam2Config, Sam2Model, Sam2Processor
    from transformers.models.sam2.image_processing_sam2 import Sam2ImageProcessor
    backbone = dict(model_type="sam2_hiera_det_model", hidden_size=16, num_attention_heads=1,
                    blocks_per_stage=[1, 1, 2, 1], embed_dim_per_stage=[16, 32, 64, 128],
                    num_attention_heads_per_stage=[1, 1, 1, 1], window_size_per_stage=[4, 4, 4, 4],
                    global_attention_blocks=[3], image_size=[S, S], window_positional_embedding_background_size=[2, 2])
    vision = dict(model_type="sam2_vision_model", backbone_config=backbone, backbone_channel_list=[128, 64, 32, 16],
                  backbone_feature_sizes=[[S // 4, S // 4], [S // 8, S // 8], [S // 16, S // 16]],
                  fpn_hidden_size=128)
    cfg = Sam2Config(vision_config=vision, prompt_encoder_config=dict(hidden_size=128, image_size=S, patch_size=16),
                     mask_decoder_config=dict(hidden_size=128, mlp_dim=64, num_hidden_layers=1, num_attention_heads=2,
                                              iou_head_hidden_dim=32))
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("sam2")
    Sam2Model(cfg).eval().save_pretrained(path)
    Sam2Processor(image_processor=Sam2ImageProcessor(size={"height": S, "width": S},
                                                     mask_size={"height": S // 4, "width": S // 4})).save_pretrained(path)
    return path


def test_sam2_refines_the_chroma_cutout(tiny_sam2):
    img = np.empty((96, 64, 3), np.uint8)
    img[:] = CHROMA["green"]
    img[20:80, 16:48] = (200, 40, 40)
    img[45:55, 16:48] = CHROMA["green"]        # a band of the key's colour across the subject
    chroma = Segmenter().segment(img, "green")
    refined = Segmenter(backend="chroma+sam2", weights_dir=str(tiny_sam2)).segment(img, "green")
    assert refined.shape == (96, 64, 4) and np.array_equal(refined[..., :3], img)
    assert not np.array_equal(refined[..., 3], chroma[..., 3])   # the mask is SAM 2's, not the key's
    assert Segmenter(backend="chroma+sam2", weights_dir=str(tiny_sam2)).fingerprint()["weights_dir"] == str(tiny_sam2)
    with pytest.raises(GenerationError, match="SAM 2 weights folder"):
        Segmenter(backend="chroma+sam2", weights_dir=str(tiny_sam2) + "-missing").segment(img, "green")


def test_sam2_is_given_the_entity_types_points(tiny_sam2):
    """The same image prompted as a character and as an object gets different masks from the same model (the
    points reach it); each answer has the image's size."""
    img = _split_figure()
    seg = Segmenter(backend="chroma+sam2", weights_dir=str(tiny_sam2))
    as_char = seg.segment(img, "green", "character")
    as_obj = seg.segment(img, "green", "object")
    assert as_char.shape == as_obj.shape == (120, 60, 4)
    assert not np.array_equal(as_char[..., 3], as_obj[..., 3])
    assert seg.fingerprint()["sam2_prompts"] == "1"
