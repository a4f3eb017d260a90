"""An S3-compatible server on 127.0.0.1 for tests and the demo: ``moto``'s server mode.

``moto[server]`` (a test extra, installed by ``scripts/bootstrap.sh``) speaks the S3
REST API, including conditional writes (``If-None-Match: *`` answers 412 when the key
exists), so pypaimon's pyarrow S3 file system and boto3 both talk to it as to AWS S3.
Each test gets its own bucket, so tables of different tests never meet.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACCESS_KEY = "paimon-test-key"
SECRET_KEY = "paimon-test-secret"  # a throwaway credential moto accepts; not a real secret
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LoopbackS3:
    """A running moto S3 server; ``stop()`` ends it."""

    endpoint: str
    process: subprocess.Popen = field(repr=False)

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )

    def options(self) -> dict[str, str]:
        """pypaimon's catalog options for this server (``fs.s3.*``, path-style access)."""
        return {
            "fs.s3.endpoint": self.endpoint,
            "fs.s3.accessKeyId": ACCESS_KEY,
            "fs.s3.accessKeySecret": SECRET_KEY,
            "fs.s3.region": REGION,
            "fs.s3.path-style-access": "true",
        }

    def new_bucket(self, prefix: str = "paimon") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_loopback_s3(timeout: float = 30.0) -> LoopbackS3:
    """Start moto's S3 server (conditional writes atomic, as on S3) on a free loopback port."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("moto_atomic_server.py")), "127.0.0.1", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"the moto S3 server exited with code {process.returncode}; "
                "is moto[server] installed (bash scripts/bootstrap.sh)?"
            )
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the moto S3 server did not listen on 127.0.0.1:{port} within {timeout}s") from None
            time.sleep(0.1)
    return LoopbackS3(endpoint=f"http://127.0.0.1:{port}", process=process)


@dataclass(frozen=True)
class S3Warehouse:
    """A fresh bucket on the loopback server: its warehouse URI and catalog options."""

    uri: str
    bucket: str
    options: dict[str, str]
    server: LoopbackS3

    def catalog_options(self) -> dict[str, str]:
        return {"warehouse": self.uri, **self.options}

    def object_keys(self, prefix: str = "") -> list[str]:
        """Every object key in the bucket under ``prefix`` (for assertions on files)."""
        client = self.server.client()
        keys: list[str] = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        return keys
