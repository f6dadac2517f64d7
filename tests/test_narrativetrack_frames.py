"""NarrativeTrack reads each video once per process: the 1 fps sampling pass also decodes the answerer's evenly
spaced frames, and a later stage asking for frames already decoded decodes nothing."""
import cv2
import numpy as np

from bench_assets.core import media
from bench_assets.narrativetrack import frame_cache as A


def _video(path, n=60, size=(64, 48)):
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, size)
    for k in range(n):
        f = np.zeros((size[1], size[0], 3), np.uint8)
        f[:, :, 1] = (k * 4) % 256                      # each frame its own green level
        cv2.rectangle(f, (k % 50, 5), (k % 50 + 10, 20), (255, 255, 255), -1)
        w.write(f)
    w.release()
    return {"video_id": "v", "path": str(path), "sha256": media.sha256_file(path)}


def test_one_pass_serves_the_sampling_and_the_answerer(tmp_path):
    video = _video(tmp_path / "v.mp4")
    A._FRAMES.clear()
    sample, answer = [0, 10, 20, 30, 40, 50], media.even_indices(60, 8)
    before = media.counters()["passes"]
    got = A.frames_at(video, sample, also=answer)
    assert media.counters()["passes"] == before + 1 and got.shape[0] == len(sample)
    again = A.frames_at(video, answer)                 # the answers stage: nothing decoded
    assert media.counters()["passes"] == before + 1
    src = media.VideoSource(video["path"])
    req = src.take(answer)
    src.run()
    assert np.array_equal(again, req.frames)            # the same frames a fresh pass gives, in the asked order
    assert np.array_equal(A.frames_at(video, [20, 0]), got[[2, 0]])
    A.frames_at(video, [5])                             # a frame not decoded yet: one more pass
    assert media.counters()["passes"] == before + 3     # (+1 for the fresh pass above)
    # a different file at the same path is another video
    other = dict(video, sha256="0" * 64)
    A.frames_at(other, [0])
    assert media.counters()["passes"] == before + 4
