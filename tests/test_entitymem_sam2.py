"""EntityMem's segmenter with SAM 2 refinement: a tiny randomly initialised SAM 2 image model of the real classes,
saved as a checkpoint folder and loaded from it, turns the chroma mask's box into its own mask of the image's size;
missing weights are an error, not a silent chroma-only cut-out."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bench_resources.generation import GenerationError, Segmenter  # noqa: E402
from bench_resources.generation.offline import CHROMA  # noqa: E402

S = 128


@pytest.fixture(scope="module")
def tiny_sam2(tmp_path_factory):
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
