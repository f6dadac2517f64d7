"""`bench ui`'s `dagster dev` with the report site on the Dagster webserver's own origin (issue 39).

The report and audit links the assets write are root-relative (``/reports/site/...``, ``/artifacts/...``): the UI
renders a metadata URL as a plain link, so a relative one opens on the UI's own address, whatever ``--port`` and
``--report-port`` are. This module makes that address answer: ``python -m bench_assets.core.ui_webserver dev ...``
runs `dagster dev` with its webserver started through ``... ui_webserver dagster_webserver ...``, which is
`dagster-webserver` with the store's ``reports/`` and ``artifacts/`` mounted before Dagster's own routes (GET only,
no listings; the same two folders ``site.serve_site`` serves)."""
from __future__ import annotations

import sys
from pathlib import Path

MOUNTS = ("reports", "artifacts")  # = site.SERVED without the slashes


def report_routes(store_root: str) -> list:
    """Starlette mounts for the store's report site and artifacts; none for a remote store (no local site)."""
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles
    if "://" in str(store_root):
        return []
    root = Path(store_root)
    # check_dir off: a store without a site yet still starts the UI; the pages answer once `bench report` ran
    return [Mount(f"/{name}", app=StaticFiles(directory=str(root / name), check_dir=False), name=f"bench-{name}")
            for name in MOUNTS]


def _patch_webserver(store_root: str) -> None:
    from dagster_webserver.webserver import DagsterWebserver
    build = DagsterWebserver.build_routes

    def build_routes(self):  # ours first: Dagster's last route answers every path with its index page
        return report_routes(store_root) + build(self)
    DagsterWebserver.build_routes = build_routes


def _patch_dev() -> None:
    import dagster._cli.dev as dev
    spawn = dev.open_ipc_subprocess
    marker = ["-m", "dagster_webserver"]

    def open_ipc_subprocess(parts, *args, **kwargs):
        parts = list(parts)
        if parts[1:3] == marker:  # dagster dev's webserver: the same CLI with the report mounted
            parts[1:3] = ["-m", "bench_assets.core.ui_webserver", "dagster_webserver"]
        return spawn(parts, *args, **kwargs)
    dev.open_ipc_subprocess = open_ipc_subprocess


def main(argv: list[str]) -> None:
    if argv[:1] == ["dagster_webserver"]:
        from bench_resources.config import store_root
        _patch_webserver(store_root())
        from dagster_webserver.cli import main as webserver_main
        sys.argv = ["dagster-webserver", *argv[1:]]
        webserver_main()
    elif argv[:1] == ["dev"]:
        _patch_dev()
        from dagster._cli import main as dagster_main
        sys.argv = ["dagster", *argv]
        dagster_main()
    else:
        raise SystemExit("usage: python -m bench_assets.core.ui_webserver dev|dagster_webserver [args]")


if __name__ == "__main__":
    main(sys.argv[1:])
