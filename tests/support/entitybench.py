"""EntityBench: a one-episode world and a judge whose answers follow the images it is asked about."""
import hashlib
import shutil

from tests.support import DATA, QUIET, ROOT  # noqa: F401
from tests.support.fake_anthropic import tool_answer


def world(tmp, episodes=("e0001",)):
    """``tmp/data`` holding the embedded episodes and the faithful generator's shots for them."""
    data = tmp / "data"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    for e in episodes:
        shutil.copy(DATA / "entitybench" / "episodes" / f"{e}.json", data / "entitybench" / "episodes")
        shutil.copytree(DATA / "generators" / "faithful" / e, data / "generators" / "faithful" / e)
    shutil.copy(DATA / "generators" / "faithful" / "generator.yaml", data / "generators" / "faithful")
    return data


def varied(body: dict) -> dict:
    """Answers that depend on the images asked about (a judge that says 8/10 to everything never closes the
    gate): scores 3-9 from a hash of the image bytes, same = 1 iff the score >= 5, sim = score / 10."""
    content = body["messages"][0]["content"]
    blob = "".join(c["source"]["data"] for c in content if c["type"] == "image")
    score = 3 + int(hashlib.sha256(blob.encode()).hexdigest(), 16) % 7
    schema = body["tools"][0]["input_schema"]
    out = {}
    for k in schema["required"]:
        p = schema["properties"][k]
        out[k] = ("a place" if p["type"] == "string" else int(score >= 5) if "enum" in p else score / 10
                  if p["type"] == "number" else score)
    return tool_answer(out)
