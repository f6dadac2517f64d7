"""HTTP clients whose timeout bounds the WHOLE request, not each socket read.

httpx/httpcore apply ``timeout`` to every single read, so a server that sends one byte per second never trips a 3 s
timeout (a fault probe measured 40 s), and headers dripped slowly are just as unbounded. Here every connect, TLS
handshake, read and write of a request is given only what is left of one deadline, set per request with
``request_deadline(t)`` (a ``time.monotonic()`` instant, thread-local). Past it, the next socket operation raises
the library's own ``ReadTimeout`` / ``WriteTimeout`` / ``ConnectTimeout``, which every caller already handles as a
timeout (the anthropic SDK turns it into ``APITimeoutError``).

The anthropic SDK speaks ``httpx2``/``httpcore2`` (a fork with the same interface); plain ``httpx`` serves the
OpenAI-compatible backend. One factory builds the bounded network backend for either stack. Requests routed
through an environment proxy (``HTTPS_PROXY``) keep per-read timeouts only.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator, Optional

_LOCAL = threading.local()


@contextmanager
def request_deadline(deadline: Optional[float]) -> Iterator[None]:
    """Bound every socket operation of requests made by this thread inside the block by ``deadline``
    (``time.monotonic()`` seconds; None: unbounded)."""
    previous = getattr(_LOCAL, "deadline", None)
    _LOCAL.deadline = deadline
    try:
        yield
    finally:
        _LOCAL.deadline = previous


def _clamp(timeout: Optional[float], exc: type[Exception]) -> Optional[float]:
    deadline = getattr(_LOCAL, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise exc("request deadline passed")
    return left if timeout is None else min(timeout, left)


_BACKENDS: dict[str, Any] = {}


def _deadline_backend(core: ModuleType) -> Any:
    """A ``core.NetworkBackend`` (core: httpcore or httpcore2) whose streams clamp every timeout to the deadline."""
    cls = _BACKENDS.get(core.__name__)
    if cls is not None:
        return cls()

    class Stream(core.NetworkStream):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
            return self._inner.read(max_bytes, _clamp(timeout, core.ReadTimeout))

        def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
            self._inner.write(buffer, _clamp(timeout, core.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: Optional[str] = None,
                      timeout: Optional[float] = None) -> "Stream":
            return Stream(self._inner.start_tls(ssl_context, server_hostname, _clamp(timeout, core.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend(core.NetworkBackend):
        def __init__(self) -> None:
            self._inner = core.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: Optional[float] = None,
                        local_address: Optional[str] = None, socket_options: Any = None) -> Stream:
            return Stream(self._inner.connect_tcp(host, port, _clamp(timeout, core.ConnectTimeout), local_address,
                                                  socket_options))

        def connect_unix_socket(self, path: str, timeout: Optional[float] = None, socket_options: Any = None
                                ) -> Stream:
            return Stream(self._inner.connect_unix_socket(path, _clamp(timeout, core.ConnectTimeout),
                                                          socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    _BACKENDS[core.__name__] = Backend
    return Backend()


_SSL: dict[str, Any] = {}
_SSL_LOCK = threading.Lock()


def _ssl_context(httpx_mod: ModuleType) -> Any:
    """One default TLS context per process (loading the CA bundle costs ~0.1-1 s; an SSLContext is shareable)."""
    with _SSL_LOCK:
        ctx = _SSL.get(httpx_mod.__name__)
        if ctx is None:
            ctx = _SSL[httpx_mod.__name__] = httpx_mod.create_ssl_context()
        return ctx


def _bounded_transport(httpx_mod: ModuleType, core: ModuleType) -> Any:
    transport = httpx_mod.HTTPTransport(verify=_ssl_context(httpx_mod))
    # httpx builds its httpcore pool privately and offers no network_backend argument; swap in an equivalent pool
    # (same TLS defaults) whose backend honours the deadline. tests/test_judge_faults.py fails if this stops working.
    transport._pool = core.ConnectionPool(ssl_context=_ssl_context(httpx_mod), network_backend=_deadline_backend(core))
    return transport


def bounded_httpx_client(timeout_s: float) -> Any:
    """A plain ``httpx.Client`` (per-read timeout ``timeout_s``) whose requests honour ``request_deadline``."""
    import httpcore
    import httpx

    return httpx.Client(transport=_bounded_transport(httpx, httpcore), timeout=httpx.Timeout(timeout_s))


def bounded_httpx2_client(timeout_s: float) -> Any:
    """The same for the anthropic SDK, which takes an ``httpx2.Client``."""
    import httpcore2
    import httpx2

    return httpx2.Client(transport=_bounded_transport(httpx2, httpcore2), timeout=httpx2.Timeout(timeout_s))
