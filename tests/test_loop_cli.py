"""Issue 39 (the daily loop): what the CLI prints is readable on a terminal.

`bench metrics` printed one 749-column line per metric; now one block per benchmark within the terminal's width
(long cells wrapped in their column, unit / aggregation / models on indented lines), every metric still listed,
``--wide`` keeps the one-line-per-metric table and ``--json`` every field."""
import json

from bench_assets import cli


def test_bench_metrics_fits_the_terminal_and_lists_every_metric(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert cli.main(["metrics", "--json"]) == 0
    ids = {(r["benchmark"], r["id"]) for r in json.loads(capsys.readouterr().out)}
    assert cli.main(["metrics"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 120, max(lines, key=len)
    blocks: dict[str, list[str]] = {}
    bench = None
    for line in lines:
        if line and not line.startswith(" ") and line.endswith(" metrics)"):
            bench = line.split(" ", 1)[0]
        elif bench is not None:
            blocks.setdefault(bench, []).append(line)
    missing = [(b, i) for b, i in sorted(ids) if not any(x.startswith(f"  {i}  ") for x in blocks.get(b, []))]
    assert not missing, missing[:5]
    assert "models: " in text and "aggregation: " in text


def test_bench_metrics_wide_keeps_one_line_per_metric(capsys):
    assert cli.main(["metrics", "--benchmark", "mbench", "--wide"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert len([x for x in lines if x.split()[0] == "mbench"]) == len(cli._metric_specs("mbench").specs)


def test_bench_ui_keeps_stop_tracebacks_out_of_the_terminal_and_in_its_log(tmp_path, capfdbinary):
    """`dagster dev`'s output is relayed as it comes; once a stop was asked for, a traceback of a process being
    stopped goes to the home's bench-ui.log only (counted), everything before it stays on the terminal."""
    import os
    import time

    r, w = os.pipe()
    stopping = {"sig": None}
    relay = cli.UiOutput(os.fdopen(r, "rb"), tmp_path / "bench-ui.log", stopping)
    tb = (b"Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\n"
          b"RuntimeError: cannot schedule new futures after shutdown\n")
    os.write(w, b"serving\n" + tb)               # a traceback while running is the user's to see
    time.sleep(0.5)
    stopping["sig"] = 2
    os.write(w, b"Shutting down\n" + tb + b"Aborted!\nDagster services shut down.\n")
    os.close(w)
    relay.close()
    out = capfdbinary.readouterr().out.decode()
    assert out.count("Traceback") == 1 and "Shutting down\nDagster services shut down.\n" in out, out
    assert relay.hidden == 1
    log = (tmp_path / "bench-ui.log").read_text()
    assert log.count("Traceback") == 2 and "Aborted!" in log


def test_bench_ui_raises_dagsters_timeouts_unless_the_user_set_them():
    env = cli.ui_env({"DAGSTER_GRPC_TIMEOUT_SECONDS": "90", "PATH": "/bin"})
    assert env["DAGSTER_GRPC_TIMEOUT_SECONDS"] == "90" and env["PATH"] == "/bin"
    assert int(env["DAGSTER_CODE_SERVER_STARTUP_TIMEOUT"]) >= 600
    assert int(env["DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS"]) >= 300


def test_bench_ui_says_when_it_is_ready_and_stops_without_clutter(tmp_path):
    """The real `bench ui` (dagster dev: webserver, daemon, code servers) on free ports: it says it is ready once
    its code location loaded; Ctrl-C stops every process it started, and the terminal shows no traceback and no
    'Restarting the code server' (a group-wide SIGTERM had the webserver restart the code server it saw die);
    dagster dev's output is in the home's bench-ui.log."""
    import os
    import signal

    import psutil

    from tests.support.daemon import free_port, start_bench_ui
    port = free_port()
    (tmp_path / "data").mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "BENCH_DATA_ROOT": str(tmp_path / "data"),
           "BENCH_STORE_ROOT": str(tmp_path / "store"), "BENCH_JUDGE_MODE": "off"}
    proc, lines = start_bench_ui(env, port)
    try:
        assert any(f"bench ui: ready at http://127.0.0.1:{port} (code location loaded in " in x for x in lines), \
            "".join(lines)[-3000:]
        tree = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGINT)
        out = "".join(lines) + proc.communicate(timeout=120)[0].decode(errors="replace")
        assert proc.returncode == 128 + signal.SIGINT, out[-2000:]
        gone, alive = psutil.wait_procs(tree, timeout=20)
        assert not alive, [" ".join(p.cmdline()) for p in alive]
        tail = out[out.index("bench ui: ready at"):]
        assert "Traceback" not in tail and "Restarting the code server" not in tail, tail[-3000:]
        assert (tmp_path / "home" / "bench-ui.log").stat().st_size > 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
