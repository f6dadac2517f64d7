"""Issue 39: "under load the UI's code server times out at 60 s and sensor-launched runs fail with it". `bench ui`
raises Dagster's gRPC timeouts for its processes (bench_assets/cli.py UI_TIMEOUTS); this checks they reach the
processes that launch and run the sensors' runs, on the real `bench ui` (dagster dev: webserver, daemon, code
servers): the daemon (sensor ticks, run launches) and every code server hold them in their environment, and the
code location's start timeout (a Dagster instance setting, `code_servers.local_startup_timeout`, which no
environment variable sets: DAGSTER_CODE_SERVER_STARTUP_TIMEOUT is read only by `dagster code-server start`) is 600 s
in a home made by the project, not Dagster's 180 s."""
import os
import signal

import psutil

from tests.support.daemon import free_port, start_bench_ui


def test_bench_ui_timeouts_reach_the_daemon_and_code_servers(tmp_path):
    port = free_port()
    (tmp_path / "data").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_") or k == "DAGSTER_HOME"}
    env.update(DAGSTER_HOME=str(tmp_path / "home"), BENCH_DATA_ROOT=str(tmp_path / "data"),
               BENCH_STORE_ROOT=str(tmp_path / "store"), BENCH_JUDGE_MODE="off")
    proc, lines = start_bench_ui(env, port)
    try:
        assert any("bench ui: ready at" in x for x in lines), "".join(lines)[-3000:]
        tree = psutil.Process(proc.pid).children(recursive=True)
        cmd = {p.pid: " ".join(p.cmdline()) for p in tree}
        daemons = [p for p in tree if "dagster-daemon" in cmd[p.pid] or "dagster._daemon" in cmd[p.pid]]
        servers = [p for p in tree if " api grpc" in cmd[p.pid] or "code-server" in cmd[p.pid]]
        assert daemons and servers, cmd
        for p in daemons + servers:
            penv = p.environ()
            for var in ("DAGSTER_GRPC_TIMEOUT_SECONDS", "DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS",
                        "DAGSTER_REPOSITORY_GRPC_TIMEOUT_SECONDS"):
                assert int(penv.get(var, "60")) >= 300, (cmd[p.pid], var, penv.get(var))
        # what the daemon's run launcher and sensor calls read (dagster._grpc.utils), in the daemon's environment
        from dagster._grpc import utils
        denv = daemons[0].environ()
        old = {k: os.environ.get(k) for k in ("DAGSTER_GRPC_TIMEOUT_SECONDS", "DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS")}
        try:
            os.environ.update({k: denv[k] for k in old})
            assert utils.default_grpc_timeout() >= 300 and utils.default_sensor_grpc_timeout() >= 300
        finally:
            for k, v in old.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        psutil.wait_procs(tree, timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # the code location's start timeout of the home `bench ui` made
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef
    inst = DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path / "home")))
    try:
        assert inst.code_server_process_startup_timeout >= 600
    finally:
        inst.dispose()


def test_a_home_without_the_start_timeout_gets_one_line_saying_how_to_set_it(tmp_path):
    """A home made from the project's dagster.yaml before it set the start timeout (its copy stays): `bench ui`
    says how to raise Dagster's 180 s; a home that sets it (the project's template now) gets no line."""
    from pathlib import Path

    import yaml
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    from bench_assets.cli import startup_timeout_note
    root = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((root / "dagster.yaml").read_text())
    for name, drop in (("old", True), ("new", False)):
        home = tmp_path / name
        home.mkdir()
        (home / "dagster.yaml").write_text(yaml.safe_dump({k: v for k, v in cfg.items()
                                                           if not (drop and k == "code_servers")}))
        inst = DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
        try:
            note = startup_timeout_note(inst, home)
        finally:
            inst.dispose()
        if drop:
            assert note == (f"note: Dagster waits 180 s for the code location to load; under load that may not be "
                            f"enough: add 'code_servers: {{local_startup_timeout: 600}}' to {home / 'dagster.yaml'} "
                            f"(as the project's dagster.yaml has)"), note
        else:
            assert note is None
