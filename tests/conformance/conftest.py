"""Starts mock-ontap once per session and drives it with NetApp's own Python client.

The mock is the binary `cargo build -p mock-ontap` makes (or $MOCK_ONTAP_BIN), on an ephemeral
loopback port in plain HTTP (`--insecure-http`; netapp-ontap 9.19.1.0 with requests 2.34 does not
take a CA file through `HostConnection(verify=path)` here, and the contract under test is the REST
API, not TLS); every test starts from `POST /_mock/reset`.
"""

import contextlib
import os
import sys
import pathlib
import subprocess
import tempfile
import time

import pytest
import requests
from netapp_ontap import HostConnection, config
from netapp_ontap.error import NetAppRestError

sys.dont_write_bytecode = True  # no __pycache__ in the work tree
ROOT = pathlib.Path(__file__).resolve().parents[2]
ADMIN = ("admin", "Netapp1!")


def _binary() -> pathlib.Path:
    explicit = os.environ.get("MOCK_ONTAP_BIN")
    if explicit:
        return pathlib.Path(explicit)
    subprocess.run(
        ["cargo", "build", "-q", "-p", "mock-ontap", "--bin", "mock-ontap"],
        cwd=ROOT,
        check=True,
    )
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "mock-ontap"


class Mock:
    """A running mock-ontap: its address, CA file and the `/_mock` control API."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.base = f"http://{host}:{port}"

    def control(self, method: str, path: str, **kwargs):
        return requests.request(method, self.base + path, timeout=10, **kwargs)

    def raw(self, method: str, path: str, auth=ADMIN, **kwargs):
        """A plain HTTP call, for what the client library cannot express."""
        return requests.request(method, self.base + path, auth=auth, timeout=10, **kwargs)

    def connection(self, user: str = ADMIN[0], password: str = ADMIN[1]) -> HostConnection:
        return HostConnection(
            self.host,
            username=user,
            password=password,
            port=self.port,
            scheme="http",
            poll_interval=0.05,
            poll_timeout=20,
        )


@contextlib.contextmanager
def _running_mock(binary: pathlib.Path, config_yaml: str = None):
    """A mock-ontap process on an ephemeral port, with `config_yaml` as its --config."""
    with tempfile.TemporaryDirectory() as tmp:
        ready = pathlib.Path(tmp, "addr")
        args = [
            str(binary),
            "--listen", "127.0.0.1:0",
            "--ready-file", str(ready),
            "--insecure-http",
            "--job-duration-ms", "50",
        ]
        if config_yaml is not None:
            path = pathlib.Path(tmp, "config.yaml")
            path.write_text(config_yaml)
            args += ["--config", str(path)]
        log = open(pathlib.Path(tmp, "mock.log"), "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while not ready.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"mock-ontap did not start ({binary})")
                time.sleep(0.05)
            host, port = ready.read_text().strip().rsplit(":", 1)
            yield Mock(host, int(port))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


@pytest.fixture(scope="session")
def mock_binary():
    return _binary()


@pytest.fixture(scope="session")
def mock_server(mock_binary):
    with _running_mock(mock_binary) as server:
        yield server


@pytest.fixture
def mock_at_version(mock_binary):
    """Starts another mock claiming the given ONTAP release: `with mock_at_version("9.12.1") as m`."""
    def start(version: str):
        return _running_mock(mock_binary, f'cluster:\n  version: "{version}"\n')
    config.RAISE_API_ERRORS = True
    return start


@pytest.fixture
def mock(mock_server):
    assert mock_server.control("POST", "/_mock/reset").status_code == 204
    config.RAISE_API_ERRORS = True
    return mock_server


@pytest.fixture
def admin(mock):
    with mock.connection() as conn:
        yield conn


def ontap_error(exc: NetAppRestError) -> dict:
    """The `error` object and HTTP status of a failed call: {status, code, message, target}."""
    response = exc.http_err_response.http_response
    error = response.json()["error"]
    return {"status": response.status_code, **error}
