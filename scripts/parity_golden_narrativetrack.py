"""Golden fixture for NarrativeTrack's accuracy: runs the official ``eval_pipeline.get_accuracy``
(apple/ml-narrativetrack) on tests/parity/golden/narrativetrack_responses.json and writes
tests/parity/golden/narrativetrack_accuracy.json (each response's ``correct`` and the total accuracy) with the
commit it ran. The official code is run from its own checkout, never copied here:

    git clone https://github.com/apple/ml-narrativetrack /tmp/parity_ref/nt   # or any checkout
    .venv/bin/python scripts/parity_golden_narrativetrack.py /tmp/parity_ref/nt --commit <sha>

``eval_pipeline`` imports the repository's model pipelines at module level (VideoLLaMA2, VideoChat2, ...) only for
answering; ``get_accuracy`` needs none of them, so those three modules are stubbed before the import.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "parity" / "golden"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkout", help="a checkout of apple/ml-narrativetrack")
    ap.add_argument("--commit", required=True, help="the commit id of that checkout (recorded in the fixture)")
    a = ap.parse_args(argv)
    for name, attrs in {"pipeline": {"get_pipeline": None}, "info": {"VIDEO_ROOT": ""},
                        "prompt": {"EVAL_PROMPT": ""}}.items():
        sys.modules[name] = types.SimpleNamespace(**attrs)
    sys.path.insert(0, str(Path(a.checkout).resolve()))
    import eval_pipeline

    items = json.loads((GOLDEN / "narrativetrack_responses.json").read_text())
    # fields get_accuracy reads besides the answer: fixed values (one cell)
    rows = [{**r, "track_type": "character", "dimension": "AC", "template_type": "start_to_later"} for r in items]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "responses.json"
        path.write_text(json.dumps(rows))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            eval_pipeline.get_accuracy(str(path))
        scored = json.loads(Path(str(path).replace(".json", "_acc.json")).read_text())
    total = [ln for ln in out.getvalue().splitlines() if ln.startswith("Total Accuracy")]
    golden = {"source": "apple/ml-narrativetrack eval_pipeline.get_accuracy", "commit": a.commit,
              "total_accuracy_line": total[-1] if total else None,
              "correct": {r["id"]: int(r["correct"]) for r in scored},
              "model_answer": {r["id"]: r["model_answer"] for r in scored}}
    (GOLDEN / "narrativetrack_accuracy.json").write_text(json.dumps(golden, indent=1) + "\n")
    print(json.dumps(golden, indent=1))
    shutil.rmtree(Path(a.checkout) / "__pycache__", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
