"""The local diffusers backends of EntityMem: a tiny randomly initialised Stable Diffusion pipeline (text to image)
and a tiny Stable Video Diffusion pipeline (image to video), built here from the real classes (no download),
saved to a folder and loaded by the resources from it, must return images / videos of the requested size."""
from __future__ import annotations

import json
import string

import numpy as np
import pytest

diffusers = pytest.importorskip("diffusers")
torch = pytest.importorskip("torch")

from bench_resources.generation import GenerationError, ImageGenerator, VideoBackbone  # noqa: E402


def _tokenizer(folder):
    """A character-level CLIP BPE tokenizer written by hand (vocab + an empty merge list)."""
    from transformers import CLIPTokenizer
    chars = sorted(set(string.ascii_lowercase + string.digits + string.punctuation))
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in chars:
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77)


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory):
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=4,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                                norm_num_groups=32)
    vae = AutoencoderKL(block_out_channels=[32, 64], in_channels=3, out_channels=3,
                        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
                        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"], latent_channels=4)
    text = CLIPTextModel(CLIPTextConfig(bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_size=32,
                                        intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
                                        vocab_size=200))
    root = tmp_path_factory.mktemp("tiny_sd")
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=_tokenizer(root / "tok"), unet=unet,
                                   scheduler=DDIMScheduler(clip_sample=False), safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    pipe.save_pretrained(root / "pipe")
    return root / "pipe"


@pytest.fixture(scope="module")
def tiny_svd(tmp_path_factory):
    from diffusers import (AutoencoderKLTemporalDecoder, EulerDiscreteScheduler, StableVideoDiffusionPipeline,
                           UNetSpatioTemporalConditionModel)
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModelWithProjection
    torch.manual_seed(0)
    unet = UNetSpatioTemporalConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=8, out_channels=4,
        down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
        up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"), cross_attention_dim=32,
        num_attention_heads=8, projection_class_embeddings_input_dim=96, addition_time_embed_dim=32)
    scheduler = EulerDiscreteScheduler(beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012,
                                       interpolation_type="linear", num_train_timesteps=1000,
                                       prediction_type="v_prediction", sigma_max=700.0, sigma_min=0.002,
                                       steps_offset=1, timestep_spacing="leading", timestep_type="continuous",
                                       use_karras_sigmas=True)
    vae = AutoencoderKLTemporalDecoder(block_out_channels=[32, 64], in_channels=3, out_channels=3,
                                       down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
                                       latent_channels=4)
    enc = CLIPVisionModelWithProjection(CLIPVisionConfig(hidden_size=32, projection_dim=32, num_hidden_layers=2,
                                                         num_attention_heads=4, image_size=224, intermediate_size=37,
                                                         patch_size=32))  # SVD resizes to 224
    pipe = StableVideoDiffusionPipeline(vae=vae, image_encoder=enc, unet=unet, scheduler=scheduler,
                                        feature_extractor=CLIPImageProcessor(crop_size=32, size=32))
    root = tmp_path_factory.mktemp("tiny_svd")
    pipe.save_pretrained(root / "pipe")
    return root / "pipe"


# Mean absolute difference (0-255 levels) allowed between the first image of a batch of 2 and the same seed drawn
# alone. Both start from the same latents, but CPU kernels may reduce a batch in another order, so a few pixel values
# differ by a level or two on some machines (issue 39: a few pixels of 9,216 values, a mean far below 0.01). Another
# seed or another prompt differs by far more; measured here: batch vs alone 0.0, seed 2 / 3 / 7 42.4 / 41.3 / 41.5,
# 'panorama of a castle' 5.48, 'a red car' 7.66 (the test requires 4x the tolerance).
BATCH_TOLERANCE = 0.5


def _mad(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.abs(x.astype(np.int16) - y.astype(np.int16)).mean())


def test_diffusers_text_to_image_from_a_weights_folder(tiny_sd):
    gen = ImageGenerator(backend="diffusers", weights_dir=str(tiny_sd), model="tiny-sd", steps=2)
    prompt = "portrait of a knight, green chroma-key background"
    a = gen.generate(prompt, 64, 48, n=2, seed=1)
    assert len(a) == 2 and all(x.shape == (48, 64, 3) and x.dtype == np.uint8 for x in a)
    assert gen.stats() == {"calls": 1, "images": 2, "resized": 0}           # the pipeline drew the size asked
    # like with like: the same call twice is bit-identical (seeded: reproducible), batched and alone
    assert all(np.array_equal(x, y) for x, y in zip(a, gen.generate(prompt, 64, 48, n=2, seed=1)))
    b = gen.generate(prompt, 64, 48, n=1, seed=1)
    assert np.array_equal(b[0], gen.generate(prompt, 64, 48, n=1, seed=1)[0])
    # batched vs alone: equal within a tolerance that a real difference (another seed, another prompt) exceeds
    other_seed = gen.generate(prompt, 64, 48, n=1, seed=2)[0]
    other_prompt = gen.generate("panorama of a castle", 64, 48, n=1, seed=1)[0]
    near, seed_d, prompt_d = _mad(a[0], b[0]), _mad(b[0], other_seed), _mad(b[0], other_prompt)
    why = f"batch vs alone {near:.3f}, another seed {seed_d:.3f}, another prompt {prompt_d:.3f} levels"
    assert near <= BATCH_TOLERANCE, why
    assert seed_d > 4 * BATCH_TOLERANCE and prompt_d > 4 * BATCH_TOLERANCE, why   # the seed and prompt reach the model
    assert gen.fingerprint()["weights_dir"] == str(tiny_sd)
    with pytest.raises(GenerationError, match="weights folder"):
        ImageGenerator(backend="diffusers", weights_dir=str(tiny_sd) + "-missing").generate("x", 64, 64)


def test_diffusers_image_to_video_from_a_weights_folder(tiny_svd):
    vb = VideoBackbone(backend="diffusers", weights_dir=str(tiny_svd), model="tiny-svd", steps=1)
    key = np.zeros((48, 64, 3), np.uint8)
    key[:, :32] = 255
    frames = vb.generate("a knight walks", [{"role": "keyframe", "label": "k", "image": key}], None, width=64,
                         height=48, n_frames=3, fps=8, seed=0)
    assert len(frames) == 3 and all(f.shape == (48, 64, 3) and f.dtype == np.uint8 for f in frames)
    other = vb.generate("a knight walks", [{"role": "keyframe", "label": "k", "image": 255 - key}], None,
                        width=64, height=48, n_frames=3, fps=8, seed=0)
    assert not np.array_equal(frames[0], other[0])                          # conditioned on the image
    # a continuation conditions on the first frame, not on the keyframe
    first = np.full((48, 64, 3), 90, np.uint8)
    a = vb.generate("p", [{"role": "keyframe", "label": "k", "image": key}], first, width=64, height=48,
                    n_frames=3, fps=8, seed=0)
    b = vb.generate("p", [{"role": "keyframe", "label": "k", "image": 255 - key}], first, width=64, height=48,
                    n_frames=3, fps=8, seed=0)
    assert np.array_equal(a[0], b[0])
    with pytest.raises(GenerationError, match="needs a first frame or a keyframe"):
        vb.generate("p", [], None, width=64, height=48, n_frames=3, fps=8)
