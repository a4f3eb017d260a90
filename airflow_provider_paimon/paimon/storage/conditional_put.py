"""Create-if-absent on S3 by a conditional PUT (``If-None-Match: *``).

S3 (AWS since August 2024, and the servers that follow its API) answers ``412
Precondition Failed`` when the key exists, atomically against every other writer, so
one ``PutObject`` both writes the whole object and wins or loses the name. pyarrow's S3
file system (pypaimon's) cannot send that header, so this goes through boto3, set up
from the same ``fs.s3.*`` / ``s3.*`` options pypaimon reads (endpoint, region,
credentials, path-style access); without credentials boto3 uses the usual AWS chain.

A store that silently ignores the header would make every commit "win": before its
first commit to a bucket, a process checks that the store refuses a second conditional
PUT of a probe object (``commit.conditional-put.verify``, on by default).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from .atomicity import ATOMICITY, LOCK, LOCK_URL, CommitAtomicityError

_PREFIXES = ("fs.s3.", "s3.", "s3a.", "fs.s3a.")
_VERIFIED: set[tuple[str, str]] = set()
_VERIFIED_LOCK = threading.Lock()
# S3 answers 409 ConditionalRequestConflict while another conditional write of the key
# is in flight; the retry then sees the winner (412) or wins.
_CONFLICT_RETRIES = 8


def _option(options: Mapping[str, Any], *keys: str) -> str | None:
    # Case-insensitive: Spark lower-cases data source option keys (fs.s3.accesskeyid).
    lowered = {str(k).lower(): v for k, v in options.items()}
    for key in keys:
        value = options.get(key, lowered.get(key.lower()))
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def _s3_option(options: Mapping[str, Any], legacy: str | None, *names: str) -> str | None:
    keys = ([legacy] if legacy else []) + [p + n for p in _PREFIXES for n in names]
    return _option(options, *keys)


def split_s3_path(path: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> ``(bucket, key)``."""
    parsed = urlparse(path)
    bucket, key = parsed.netloc, parsed.path.lstrip("/")
    if not bucket or not key:
        raise CommitAtomicityError(f"not an object path in a bucket: {path!r}")
    return bucket, key


class S3ConditionalPut:
    """``create(path, text)``: write the object only if its key is absent."""

    def __init__(self, options: Mapping[str, Any], verify: bool = True) -> None:
        self._options = {str(k): str(v) for k, v in options.items() if v is not None}
        self._verify = verify
        self._client: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # a boto3 client does not pickle
        return {"_options": self._options, "_verify": self._verify}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["_options"], state["_verify"])  # type: ignore[misc]  # rebuilds the unpicklable parts

    @property
    def endpoint(self) -> str:
        return _s3_option(self._options, "fs.s3.endpoint", "endpoint") or "AWS S3"

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _make_client(self._options)
            return self._client

    def create(self, path: str, text: str) -> bool:
        """True if this call created ``path``; False if the key already existed."""
        bucket, key = split_s3_path(path)
        if self._verify:
            self._verify_bucket(bucket, key)
        return self._put_if_absent(bucket, key, text.encode("utf-8"))

    def _put_if_absent(self, bucket: str, key: str, body: bytes) -> bool:
        from botocore.exceptions import ClientError, ParamValidationError

        client = self.client()
        for attempt in range(_CONFLICT_RETRIES):
            try:
                client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
                return True
            except ParamValidationError:  # a botocore from before August 2024
                raise CommitAtomicityError(
                    "this boto3/botocore cannot send If-None-Match on PutObject; "
                    "pip install 'airflow-provider-paimon[s3]' (boto3>=1.35.10)"
                ) from None
            except ClientError as err:
                code = str(err.response.get("Error", {}).get("Code", ""))
                status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                if code == "PreconditionFailed" or status == 412:
                    return False
                if code == "ConditionalRequestConflict" or status == 409:
                    time.sleep(0.05 * (attempt + 1))
                    continue
                if code in ("NotImplemented", "InvalidArgument") or status == 501:
                    raise CommitAtomicityError(_unsupported(self.endpoint, code)) from None
                raise
        raise OSError(f"s3://{bucket}/{key}: conditional PUT kept conflicting with another writer")

    def _verify_bucket(self, bucket: str, key: str) -> None:
        """Once per process and bucket: the store must refuse a second conditional PUT."""
        token = (self.endpoint, bucket)
        if token in _VERIFIED:
            return
        with _VERIFIED_LOCK:
            if token in _VERIFIED:
                return
            folder = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
            probe = f"{folder}.paimon-conditional-put-probe-{uuid.uuid4().hex}"
            client = self.client()
            try:
                first = self._put_if_absent(bucket, probe, b"1")
                second = self._put_if_absent(bucket, probe, b"2")
            finally:
                client.delete_object(Bucket=bucket, Key=probe)
            if not first or second:
                raise CommitAtomicityError(_unsupported(self.endpoint, "If-None-Match ignored"))
            _VERIFIED.add(token)


def _unsupported(endpoint: str, detail: str) -> str:
    return (
        f"the object store at {endpoint} does not honour conditional writes "
        f"(If-None-Match: *; {detail}), so commits cannot be made safe with them: set option "
        f"{ATOMICITY!r}={LOCK!r} and {LOCK_URL!r} (a SQLAlchemy URL) to commit under a database lock"
    )


def _make_client(options: Mapping[str, Any]) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise CommitAtomicityError(
            f"option {ATOMICITY!r}='conditional-put' (the default on s3://) needs boto3: "
            "pip install 'airflow-provider-paimon[s3]'"
        ) from None
    path_style = (_s3_option(options, None, "path-style-access", "path.style.access") or "").lower()
    config = Config(
        s3={"addressing_style": "path" if path_style in ("true", "1", "yes", "on") else "auto"},
        retries={"max_attempts": 5, "mode": "standard"},
    )
    endpoint = _s3_option(options, "fs.s3.endpoint", "endpoint")
    if endpoint and "://" not in endpoint:  # pyarrow takes host:port; https unless told
        endpoint = f"{_s3_option(options, None, 'scheme') or 'https'}://{endpoint}"
    kwargs: dict[str, Any] = {
        "endpoint_url": endpoint,
        "region_name": _s3_option(options, "fs.s3.region", "region"),
        "aws_access_key_id": _s3_option(options, "fs.s3.accessKeyId", "access-key", "access.key"),
        "aws_secret_access_key": _s3_option(options, "fs.s3.accessKeySecret", "secret-key", "secret.key"),
        "aws_session_token": _s3_option(
            options, "fs.s3.securityToken", "session-token", "session.token", "security-token", "security.token"
        ),
        "config": config,
    }
    return boto3.session.Session().client("s3", **{k: v for k, v in kwargs.items() if v is not None})
