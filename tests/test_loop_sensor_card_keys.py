"""Issue 39: the generator sensor and the evaluate job check card keys as `bench evaluate` does (the check ran in the
CLI only). A misspelt key in one generator's card is that folder's error in the tick (the sensor asks for the
others); an unknown key is a warning in the tick's log, naming the key and the card; a run naming the misspelt card
fails with the same error. The code location's own sensor and job (definitions.py hands them the keys), evaluated on a
real instance with the environment pointing at a test world (as tests/test_loop_sensor.py does with its builder)."""
import logging
import shutil

import pytest
from dagster import build_sensor_context, instance_for_test

from tests.support.entitybench import world

OP = "entitybench_evaluate_op"


class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[tuple[int, str]] = []

    def emit(self, record):
        self.records.append((record.levelno, record.getMessage()))


def _copy(data, name: str, extra: str):
    """A generator folder like faithful's (same shots), its card with ``extra`` lines."""
    src, dst = data / "generators" / "faithful", data / "generators" / name
    shutil.copytree(src, dst)
    card = (src / "generator.yaml").read_text(encoding="utf-8").replace("name: faithful", f"name: {name}")
    assert f"name: {name}" in card
    (dst / "generator.yaml").write_text(card + extra, encoding="utf-8")


@pytest.fixture
def tick(tmp_path, monkeypatch):
    data, store = world(tmp_path), tmp_path / "store"
    _copy(data, "typo", "entitymen: arm_a\n")          # misspelt 'entitymem': refused
    _copy(data, "noted", "homepage: https://example.org/noted\n")   # read by nothing: a warning
    monkeypatch.setenv("BENCH_STORE_ROOT", str(store))
    monkeypatch.setenv("BENCH_DATA_ROOT", str(data))
    monkeypatch.setenv("BENCH_GENERATORS_ROOT", str(data / "generators"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")
    from bench_assets import definitions   # its sensor and job read the paths from the environment when they run
    job, sensor = definitions.EVALUATE_JOBS["entitybench"], definitions.SENSORS["entitybench"]
    with instance_for_test() as instance:
        log = Capture()
        ctx = build_sensor_context(instance=instance)
        ctx.log.addHandler(log)
        yield data, job, instance, sensor(ctx), log


def test_the_sensor_refuses_a_misspelt_card_key_and_warns_of_an_unknown_one(tick):
    data, job, instance, result, log = tick
    [req] = result.run_requests
    assert req.run_config["ops"][OP]["config"]["generators"] == ["faithful", "noted"]
    errors = [m for lvl, m in log.records if lvl >= logging.ERROR]
    warns = [m for lvl, m in log.records if lvl == logging.WARNING]
    typo = [m for m in errors if "typo" in m]
    assert len(typo) == 1 and "key 'entitymen' is not a entitybench card key; did you mean 'entitymem'?" in typo[0], \
        errors
    assert str(data / "generators" / "typo" / "generator.yaml") in typo[0]
    assert not any("noted" in m or "faithful" in m for m in errors), errors
    noted = [m for m in warns if "'homepage'" in m]
    assert len(noted) == 1 and "generator 'noted'" in noted[0] and "is ignored" in noted[0], warns


def test_a_run_naming_the_misspelt_card_fails_with_its_error(tick):
    data, job, instance, result, log = tick
    bad = job.execute_in_process(run_config={"ops": {OP: {"config": {"generators": ["typo"], "items": ["e0001"],
                                                                     "aggregates": False}}}},
                                 instance=instance, raise_on_error=False)
    assert not bad.success
    text = next(e for e in bad.all_events if e.is_step_failure).step_failure_data.error.message
    assert "generator 'typo'" in text and "did you mean 'entitymem'?" in text, text
    assert "no folder with a generator.yaml" not in text, text
