"""Motion links through the native frames between 1 fps samples (flow_links; issue 23): a walker who moves a box width
per second keeps one track at two file sizes, where IoU on the samples alone breaks it, and two walkers passing each
other are not swapped."""
import numpy as np
import pytest

from bench_assets.narrativetrack import constants, flow_links, pipeline, stages

FPS = 10
SECONDS = 6


def _walkers(scale: int):
    """Native frames (10 fps) of a textured static background with two textured walkers (20 x 60 at scale 1): A walks
    right a box width (20 px) per second, B walks left at the same speed lower down, and they pass each other half-way
    (B's head covering A's feet); and the walkers' true boxes at each 1 fps sample."""
    rng = np.random.default_rng(7)
    bg = rng.integers(0, 256, (150, 160, 3), np.uint8)
    tex = [rng.integers(0, 256, (60, 20, 3), np.uint8), rng.integers(0, 256, (60, 20, 3), np.uint8)]
    frames, truth = [], []
    for i in range(FPS * SECONDS + 1):
        t = i / FPS
        f = bg.copy()
        boxes = []
        for k, (x0, y0, v) in enumerate(((20.0, 30.0, 20.0), (120.0, 80.0, -20.0))):
            x = int(round(x0 + v * t))
            f[int(y0):int(y0) + 60, x:x + 20] = tex[k]
            boxes.append([x, y0, x + 20, y0 + 60])
        big = np.kron(f, np.ones((scale, scale, 1), np.uint8))
        frames.append(big)
        if i % FPS == 0:
            truth.append([[c * scale for c in b] for b in boxes])
    return frames, truth


def _write(path, frames):
    import cv2
    h, w = frames[0].shape[:2]
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), FPS, (w, h))
    for f in frames:
        out.write(np.ascontiguousarray(f[..., ::-1]))
    out.release()


def _rows(truth, noise_rng):
    """Detection rows at each sample, each walker's box jittered in width and height (a detector's box of a walker
    changes shape between samples), listed in a changing order."""
    samples, boxes, who = [], [], []
    for s, bs in enumerate(truth):
        order = [0, 1] if s % 2 else [1, 0]
        for k in order:
            x1, y1, x2, y2 = bs[k]
            w, h = x2 - x1, y2 - y1
            jx, jy = noise_rng.uniform(-0.12, 0.12) * w, noise_rng.uniform(-0.06, 0.06) * h
            samples.append(s)
            boxes.append([x1 - jx, y1 - jy, x2 + jx, y2 + jy])
            who.append(k)
    return samples, boxes, who


@pytest.mark.parametrize("scale", [2, 4])
def test_flow_links_keep_a_walker_whole_at_two_sizes_where_iou_tracking_breaks(tmp_path, scale):
    frames, truth = _walkers(scale)
    path = tmp_path / f"walk{scale}.avi"
    _write(path, frames)
    samples, boxes, who = _rows(truth, np.random.default_rng(scale))
    n = len(truth)
    idx = [s * FPS for s in range(n)]
    shots = [0] * n
    dets = [{"sample": s, "box": b, "score": 0.9} for s, b in zip(samples, boxes)]
    # the 1 fps IoU tracker alone: its links cut where consecutive boxes overlap under LINK_POSITIVE_IOU (as the
    # identities step does) leaves each walker in pieces
    tracker = stages.tracklets(dets, n, shots, 1.0)
    cut = pipeline.split_on(tracker, samples, boxes, constants.LINK_POSITIVE_IOU,
                            lambda a, b: float(pipeline.iou_matrix([a], [b])[0, 0]))
    assert all(len({cut[i] for i in range(len(who)) if who[i] == k}) > 1 for k in (0, 1))
    got = flow_links.flow_links(str(path), idx, shots, flow_links.boxes_by_sample(samples, boxes),
                                constants.LINK_POSITIVE_IOU)
    assert got["pairs"] == list(range(n - 1)) and not got["undecoded"]
    # every link joins one walker's boxes, and each walker is linked across every second
    assert all(who[a] == who[b] and samples[b] == samples[a] + 1 for a, b, _ in got["links"])
    assert len(got["links"]) == 2 * (n - 1)
    motion = flow_links.relink(tracker, samples, boxes, [(a, b) for a, b, _ in got["links"]], got["pairs"],
                               constants.LINK_POSITIVE_IOU)
    assert [len({motion[i] for i in range(len(who)) if who[i] == k}) for k in (0, 1)] == [1, 1]
    assert motion[who.index(0)] != motion[who.index(1)]


def test_flow_links_respect_shots_and_carried_boxes_are_pure():
    # a box is carried by the median flow inside its central part, in frame pixels whatever the flow image's scale
    flow = np.zeros((60, 80, 2), np.float32)
    flow[10:40, 20:30] = (3.0, -1.0)      # the walker's pixels move; the background does not
    moved = flow_links.propagate(np.array([[36.0, 20.0, 64.0, 80.0]]), flow, 0.5)
    assert np.allclose(moved, [[42.0, 18.0, 70.0, 78.0]])
    # the whole box's median would be the background's (no motion): the central share is what moves
    assert np.allclose(flow_links.propagate(np.array([[30.0, 10.0, 90.0, 90.0]]), flow, 0.5, inner=1.0),
                       [[30.0, 10.0, 90.0, 90.0]])
    # one to one: two carried boxes wanting the same box, the better overlap wins; shape changes do not count
    links = flow_links.match(np.array([[0, 0, 10, 30], [4, 0, 14, 30]], float),
                             np.array([[5, 0, 13, 30], [40, 0, 50, 30]], float), 0.5)
    assert links == [(1, 0, pytest.approx(links[0][2]))] and links[0][2] > 0.8
    assert flow_links.centred_iou([[0, 0, 10, 40]], [[-3, 2, 13, 38]])[0, 0] == pytest.approx(1.0)
    # relink: a tracker link across a shot-less gap is kept where its boxes overlap; motion decides followed pairs
    ids = flow_links.relink([0, 0, 0, 1], [0, 1, 3, 3], [[0, 0, 10, 30], [20, 0, 30, 30], [21, 0, 31, 30],
                                                         [0, 0, 10, 30]], [], [0], 0.5)
    assert ids[0] != ids[1] and ids[1] == ids[2] and ids[3] not in (ids[0], ids[1])
