"""MBench inputs the fault suite found unclear: a UTF-16 case file, a folder named like an output, a .gif output."""
import json

import pytest

from bench_assets.mbench import dataset as D


def test_utf16_case_file_is_one_clear_error_naming_the_file(tmp_path):
    p = tmp_path / "c1.json"
    p.write_text(json.dumps({"case_id": "c1"}), encoding="utf-16")
    with pytest.raises(D.CaseError, match=r"case c1: c1\.json is UTF-16; save it as UTF-8"):
        D.load_case(p)


def test_output_lookup_finds_other_containers_and_names_a_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "c1.mp4").mkdir()
    assert D.output_video(tmp_path / "a", "c1").is_dir()      # the asset says "is a directory, not a video"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "c1.gif").write_bytes(b"GIF89a")
    assert D.output_video(tmp_path / "b", "c1").name == "c1.gif"
    assert D.output_video(tmp_path / "c", "c1").name == "c1.mp4"  # nothing there: the expected name
