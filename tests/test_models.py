"""Model slots: offline substitutes run on real photos; paper architectures are wired with random weights."""
import hashlib

import numpy as np
import pytest
import skimage.data as sd
import torch

from bench_resources.device import Device
from bench_resources.models import ModelRegistry, SlotUnavailable, forward_count
from bench_resources.models.specs import SLOTS

CPU = Device(device="cpu", batch_size=2)


@pytest.fixture(scope="module")
def offline():
    return ModelRegistry(profile="offline")


def cos(a, b):
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


def test_offline_image_embedder(offline):
    emb = offline.slot("image_embedder", CPU)
    a, c = sd.astronaut(), sd.chelsea()
    f0 = forward_count()
    e = emb.embed([a, np.roll(a, 6, axis=1), c])  # 3 images, batch size 2 -> 2 forwards
    assert forward_count() - f0 == 2
    assert e.shape == (3, 1280) and np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    assert e[0] @ e[1] > e[0] @ e[2] + 0.3


def test_offline_detectors_on_real_photos(offline):
    det = offline.slot("open_vocab_detector", CPU)
    cat = det.detect([sd.chelsea()], "a small orange tabby cat")[0]
    assert len(cat) >= 1 and set(cat.data["label"]) == {"cat"} and cat.confidence.max() > 0.5
    cup = det.detect([sd.coffee()], "a cup of coffee with latte art")[0]
    assert len(cup) >= 1 and set(cup.data["label"]) == {"cup"}
    person = det.detect([sd.astronaut()], "a woman astronaut in an orange spacesuit", kind="character")[0]
    assert set(person.data["label"]) == {"person"}
    assert det.match_label("a grey-haired man in a dark suit, white shirt and tie", "character")[0] == "person"
    assert det.match_label("a grey-haired man in a dark suit, white shirt and tie")[0] == "tie"  # why kind matters
    loc = det.detect([sd.astronaut()], "a temple among trees", kind="location")[0]
    assert len(loc) == 0 and "cannot ground locations" in det.last_reason
    persons = offline.slot("person_detector", CPU).detect([sd.astronaut(), sd.coffee()])
    assert len(persons[0]) == 1 and len(persons[1]) == 0


def test_offline_face_identity(offline):
    face = offline.slot("face", CPU)
    a = sd.astronaut()
    cam = np.stack([sd.camera()] * 3, -1)
    da, dc = face.detect([a, cam])
    assert len(da) == 1 and len(dc) == 1
    x1, y1, x2, y2 = da.xyxy[0]
    assert 150 < x1 < 200 and 50 < y1 < 80 and 250 < x2 < 290  # the astronaut's face
    shifted = np.ascontiguousarray(np.roll(a, 8, axis=0))
    ea = face.embed_faces(a, da)[0]
    es = face.embed_faces(shifted, face.detect([shifted])[0])[0]
    ec = face.embed_faces(cam, dc)[0]
    assert cos(ea, es) > 0.8 > cos(ea, ec) + 0.3


def test_offline_text_and_flow(offline):
    t = offline.slot("text_embedder", CPU).embed(["a man walks a dog", "a person walking a dog", "stock prices fell"])
    assert t.shape == (3, 384) and t[0] @ t[1] > t[0] @ t[2] + 0.3
    img = sd.astronaut()
    flow = offline.slot("flow", CPU).flow([(img, np.roll(img, 3, axis=1))])[0]
    assert flow.shape == (512, 512, 2)
    assert abs(np.median(flow[50:450, 50:450, 0]) - 3.0) < 0.5 and abs(np.median(flow[50:450, 50:450, 1])) < 0.5


def test_statuses_and_clear_unavailability(offline, tmp_path):
    st = {s.slot: s for s in offline.statuses()}
    assert set(st) == set(SLOTS)
    for name in ("clip_b32", "clip_l14", "aesthetic", "musiq"):
        assert not st[name].available and "no offline substitute" in st[name].reason
    for name in ("image_embedder", "open_vocab_detector", "person_detector", "face", "flow", "text_embedder"):
        assert st[name].available and st[name].fingerprint
    with pytest.raises(SlotUnavailable, match="slot 'musiq'.*no offline substitute"):
        offline.slot("musiq")
    paper = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "w"))
    with pytest.raises(SlotUnavailable) as ei:
        paper.slot("image_embedder")
    msg = str(ei.value)
    assert "slot 'image_embedder'" in msg and "DINOv2" in msg and str(tmp_path / "w" / "image_embedder") in msg
    assert "bench weights import image_embedder" in msg
    assert paper.status("aesthetic").reason.startswith("slot 'aesthetic'")


def test_import_weights_then_paper_dinov2_runs(tmp_path):
    """Real loading code of the paper's DINOv2 ViT-B/14, fed a randomly initialised checkpoint."""
    from bench_resources.models.vision import dinov2_module
    ckpt = tmp_path / "dinov2_vitb14.pth"
    torch.manual_seed(0)
    torch.save(dinov2_module().state_dict(), ckpt)
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "weights"))
    st = reg.import_weights("image_embedder", ckpt)
    assert st.available and st.fingerprint == hashlib.sha256(ckpt.read_bytes()).hexdigest()
    assert (tmp_path / "weights" / "image_embedder" / "dinov2_vitb14.pth").exists()
    emb = reg.slot("image_embedder", Device(device="cpu", batch_size=2))
    assert reg.slot("image_embedder", Device(device="cpu", batch_size=2)) is emb  # loaded once per process
    out = emb.embed([sd.astronaut(), sd.chelsea(), sd.coffee()])
    assert out.shape == (3, 768) and np.allclose(np.linalg.norm(out, axis=1), 1, atol=1e-4)
    # Other weights imported while the process lives (a code server): the slot loads them, never the old model.
    torch.manual_seed(1)
    torch.save(dinov2_module().state_dict(), ckpt)
    st2 = reg.import_weights("image_embedder", ckpt)
    assert st2.fingerprint != st.fingerprint
    emb2 = reg.slot("image_embedder", Device(device="cpu", batch_size=2))
    assert emb2 is not emb
    out2 = emb2.embed([sd.astronaut(), sd.chelsea(), sd.coffee()])
    assert not np.allclose(out, out2, atol=1e-3)


def test_paper_clip_and_raft_wiring():
    from bench_resources.models.flow import RaftFlow
    from bench_resources.models.vision import ClipModel
    clip = ClipModel.from_open_clip("ViT-B-32", None, torch.device("cpu"), torch.float32, 2)
    sims = clip.similarity([sd.astronaut(), sd.chelsea(), sd.coffee()], ["a cat", "a cup"])
    assert sims.shape == (3, 2) and np.all(np.abs(sims) <= 1.0001)
    from torchvision.models.optical_flow import raft_small
    raft = RaftFlow(raft_small(weights=None), torch.device("cpu"), batch_size=2)
    a = sd.astronaut()[:100, :124]
    flows = raft.flow([(a, a), (a, np.roll(a, 2, 1)), (a, a)])
    assert len(flows) == 3 and flows[0].shape == (100, 124, 2)


def test_device_resource():
    assert str(Device(device="cpu").torch_device()) == "cpu"
    assert Device(device="auto").torch_device().type in {"cpu", "cuda", "mps"}
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            Device(device="cuda:0").torch_device()


def test_paper_aesthetic_head_and_musiq_loading(tmp_path):
    """The LAION head and a MUSIQ TorchScript file go through their real loading code (random weights)."""
    from bench_resources.models.vision import AestheticPredictor, ClipModel
    clip = ClipModel.from_open_clip("ViT-B-32", None, torch.device("cpu"), torch.float32, 2)
    head = torch.nn.Linear(512, 1)
    torch.save(head.state_dict(), tmp_path / "head.pth")
    scores = AestheticPredictor(clip, tmp_path / "head.pth").score([sd.astronaut(), sd.coffee()])
    emb = torch.from_numpy(clip.embed_images([sd.astronaut(), sd.coffee()]))
    assert np.allclose(scores, head(emb).squeeze(-1).detach().numpy(), atol=1e-4)



def test_paper_musiq_is_pyiqa_architecture_from_a_state_dict(tmp_path):
    """The MUSIQ slot builds pyiqa's MUSIQ (what VBench runs), loads a state dict strictly (pyiqa's 'params'
    wrapper included) and cuts the longer side to 512 px as VBench's 'longer' mode before scoring."""
    from pyiqa.archs.musiq_arch import MUSIQ
    from torchvision.transforms import functional as TF
    from bench_resources.models.vision import CheckpointMismatch
    torch.manual_seed(3)
    ref = MUSIQ(num_class=1, pretrained=False).eval()
    ckpt = tmp_path / "musiq_spaq_ckpt-358bb6af.pth"
    torch.save({"params": ref.state_dict()}, ckpt)
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "w"))
    reg.import_weights("musiq", ckpt)
    iqa = reg.slot("musiq", CPU)
    wide = sd.astronaut()[:150, :]                     # 150 x 512: not resized
    big = np.ascontiguousarray(np.concatenate([sd.astronaut()] * 2, axis=1)[:300])  # 300 x 1024 -> 150 x 512
    got = iqa.score([wide, big])
    with torch.no_grad():
        x = torch.from_numpy(big).permute(2, 0, 1)[None]
        exp_big = float(ref(TF.resize(x, [150, 512], antialias=False) / 255.0))
        exp_wide = float(ref(torch.from_numpy(wide).permute(2, 0, 1)[None] / 255.0))
        native_big = float(ref(x / 255.0))
    assert got[0] == pytest.approx(exp_wide, abs=1e-4) and got[1] == pytest.approx(exp_big, abs=1e-4)
    assert abs(native_big - exp_big) > 1e-4          # the resize matters: native resolution scores otherwise
    bad = {k: v for k, v in ref.state_dict().items() if not k.startswith("head")}
    torch.save(bad, tmp_path / "bad.pth")
    from bench_resources.models.musiq import MusiqIQA
    with pytest.raises(CheckpointMismatch, match="musiq"):
        MusiqIQA.load(tmp_path / "bad.pth", "cpu")


def test_openai_clip_slots_run_quickgelu_and_the_checkpoint_crop(tmp_path):
    """OpenAI's CLIP weights were trained with QuickGELU: every slot loading them builds QuickGELU (open_clip's
    plain ViT-B-32 config is GELU and only warns); frames are resized on the short side and centre-cropped, so
    what lies outside the crop of a wide frame cannot change the embedding (squashing read it)."""
    import open_clip
    from open_clip.transformer import QuickGELU
    torch.manual_seed(0)
    src = open_clip.create_model("ViT-B-32-quickgelu")
    ckpt = tmp_path / "ViT-B-32.pt"
    torch.save(src.state_dict(), ckpt)
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "w"))
    reg.import_weights("clip_b32", ckpt)
    clip = reg.slot("clip_b32", CPU)
    acts = {type(m) for m in clip.model.modules() if "GELU" in type(m).__name__}
    assert acts == {QuickGELU}
    wide = np.ascontiguousarray(np.concatenate([sd.astronaut()[::2, ::2]] * 3, axis=1)[:, :600])  # 256 x 600
    edited = wide.copy()
    edited[:, :150] = 255 - edited[:, :150]           # outside the central 256 x 256 crop
    e = clip.embed_images([wide, edited])
    assert float(e[0] @ e[1]) > 1 - 1e-6
    squash = ClipModelFrom(src)
    s = squash.embed_images([wide, edited])
    assert float(s[0] @ s[1]) < 1 - 1e-4


def ClipModelFrom(model):
    import open_clip
    from bench_resources.models.vision import ClipModel
    return ClipModel(model, open_clip.get_tokenizer("ViT-B-32"), size=224, mean=(0.48145466, 0.4578275, 0.40821073),
                     std=(0.26862954, 0.26130258, 0.27577711), device="cpu", dtype=torch.float32, batch_size=2)
