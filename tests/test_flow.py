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
