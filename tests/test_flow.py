"""The offline flow slot (OpenCV DIS) reads geometry, not brightness: a global gain change between two frames of a
static textured scene is not motion, while a real shift still is."""
import cv2
import numpy as np

from bench_resources.models.flow import DisFlow, gain_aligned


def _scene(seed: int = 3, h: int = 144, w: int = 192) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = cv2.resize(rng.uniform(30, 220, (h // 8, w // 8, 3)).astype(np.float32), (w, h),
                      interpolation=cv2.INTER_CUBIC)
    return np.clip(base + rng.normal(0, 6, (h, w, 3)), 0, 255).astype(np.uint8)


def _top2(flow: np.ndarray) -> float:
    mag = np.linalg.norm(flow, axis=-1).ravel()
    k = max(1, int(0.02 * mag.size))
    return float(np.partition(mag, -k)[-k:].mean())


def _gain(img: np.ndarray, g: float) -> np.ndarray:
    return np.clip(img.astype(np.float32) * g, 0, 255).astype(np.uint8)


def test_gain_change_is_not_motion_but_a_shift_is():
    a = _scene()
    dark = _gain(a, 0.65)
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    grey = lambda x: cv2.cvtColor(x, cv2.COLOR_RGB2GRAY)  # noqa: E731
    raw = _top2(dis.calc(grey(a), grey(dark), None))
    aligned = _top2(DisFlow().flow([(a, dark)])[0])
    assert aligned < 0.5 < raw, (aligned, raw)          # unaligned DIS sees the gain change as motion
    shifted = np.roll(a, 4, axis=1)
    f = DisFlow().flow([(a, _gain(shifted, 0.65))])[0]
    assert abs(float(np.median(f[20:-20, 20:-20, 0])) - 4.0) < 0.5  # a real 4 px shift survives the alignment


def test_gain_aligned_fits_gain_and_offset_and_leaves_flat_frames_alone():
    a = cv2.cvtColor(_scene(5), cv2.COLOR_RGB2GRAY)
    b = np.clip(a.astype(np.float32) * 0.8 + 10, 0, 255).astype(np.uint8)
    ma, mb = gain_aligned(a, b)
    assert mb is b and np.abs(ma.astype(int) - b.astype(int)).mean() < 1.0
    flat = np.full_like(a, 255)                           # all clipped: nothing to fit, frames unchanged
    fa, fb = gain_aligned(flat, b)
    assert fa is flat and fb is b


# ------------------------------------------------------------------------------------------------ paper RAFT

def test_raft_pads_as_vbench_and_runs_20_iterations():
    """VBench pads with InputPadder('sintel') (half each side, replicate) and runs iters=20: the project's RAFT
    gives the flow of exactly that input (torchvision's default 12 updates gave other flows)."""
    import torch
    import torch.nn.functional as F
    from torchvision.models.optical_flow import raft_small
    from bench_resources.models.flow import RaftFlow, sintel_pad
    assert sintel_pad(130, 181) == (1, 2, 3, 3) and sintel_pad(272, 640) == (0, 0, 0, 0)
    assert sintel_pad(100, 124) == (2, 2, 14, 14)   # under 128 px: padded up to 128 the same way
    torch.manual_seed(1)
    m = raft_small(weights=None).eval()
    rng = np.random.default_rng(0)
    a = cv2.GaussianBlur(rng.integers(0, 255, (130, 181, 3), dtype=np.uint8), (7, 7), 2)
    b = np.roll(a, 3, axis=1)
    got = RaftFlow(m, torch.device("cpu"), batch_size=1).flow([(a, b)])[0]

    def prep(x):
        t = torch.from_numpy(x).permute(2, 0, 1).float()[None]
        return F.pad(2 * (t / 255.0) - 1.0, (1, 2, 3, 3), mode="replicate")

    with torch.no_grad():
        f20 = m(prep(a), prep(b), num_flow_updates=20)[-1][0, :, 3:133, 1:182].permute(1, 2, 0).numpy()
        f12 = m(prep(a), prep(b), num_flow_updates=12)[-1][0, :, 3:133, 1:182].permute(1, 2, 0).numpy()
    assert got.shape == (130, 181, 2)
    assert np.abs(got - f20).max() < 1e-4 and np.abs(got - f12).max() > 1e-3


def test_raft_slot_loads_the_original_raft_checkpoint_vbench_ships(tmp_path):
    """VBench loads princeton-vl's raft-things.pth ('module.' keys, the original module names): the paper slot
    imports that file as it is and gives the original network's flow (same random weights on both sides)."""
    import torch
    from easydict import EasyDict
    from vbench.third_party.RAFT.core.raft import RAFT
    from vbench.third_party.RAFT.core.utils_core.utils import InputPadder
    from bench_resources.models import ModelRegistry
    from bench_resources.device import Device
    torch.manual_seed(2)
    ref = RAFT(EasyDict(small=False, mixed_precision=False, alternate_corr=False)).eval()
    ckpt = tmp_path / "raft_large.pth"
    torch.save({"module." + k: v for k, v in ref.state_dict().items()}, ckpt)
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "w"))
    reg.import_weights("flow", ckpt)
    raft = reg.slot("flow", Device(device="cpu", batch_size=1))
    rng = np.random.default_rng(1)
    a = cv2.GaussianBlur(rng.integers(0, 255, (128, 136, 3), dtype=np.uint8), (7, 7), 2)
    b = np.roll(a, (2, -3), axis=(0, 1))
    got = raft.flow([(a, b)])[0]
    t = lambda x: torch.from_numpy(x).permute(2, 0, 1).float()[None]  # noqa: E731
    i1, i2 = t(a), t(b)
    pad = InputPadder(i1.shape)
    with torch.no_grad():
        _, up = ref(*pad.pad(i1, i2), iters=20, test_mode=True)
    exp = pad.unpad(up)[0].permute(1, 2, 0).numpy()
    assert np.abs(got - exp).max() < 1e-3 and np.abs(exp).mean() > 1e-2
