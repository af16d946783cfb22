"""Claim check: Temporal payloads over a threshold live in Postgres; histories carry only their hash.

Temporal fails payloads over 2 MB and histories over 50 MB, while a step may return far more. The codec
sits in the data converter of every client (API, worker, replays), so workflow code never sees it: it holds
real values, and each large one crosses Temporal as a 64-byte reference. Blobs are content-addressed, so the
same bytes are stored once however often they travel.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import asyncpg
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

ENCODING = b"mint/claim-check"
THRESHOLD_BYTES = 64 * 1024
CACHE_ENTRIES = 32


class ClaimCheckCodec(PayloadCodec):
    def __init__(self, pool: asyncpg.Pool, threshold: int = THRESHOLD_BYTES):
        self.pool = pool
        self.threshold = threshold
        # Recent blobs, so replays skip Postgres. Bytes, not Payload objects: the SDK rewrites the payloads
        # it hands to encode() in place, so a cached object would turn into its own reference.
        self._cache: OrderedDict[str, bytes] = OrderedDict()

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [await self._store(p) if p.ByteSize() > self.threshold else p for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [await self._load(p) if p.metadata.get("encoding") == ENCODING else p for p in payloads]

    async def _store(self, payload: Payload) -> Payload:
        data = payload.SerializeToString()
        digest = hashlib.sha256(data).hexdigest()
        await self.pool.execute(
            "INSERT INTO blobs (hash, data) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING", digest, data
        )
        self._remember(digest, data)
        return Payload(metadata={"encoding": ENCODING}, data=digest.encode())

    async def _load(self, reference: Payload) -> Payload:
        digest = reference.data.decode()
        data = self._cache.get(digest)
        if data is not None:
            self._cache.move_to_end(digest)
        else:
            data = await self.pool.fetchval("SELECT data FROM blobs WHERE hash = $1", digest)
            if data is None:
                raise ValueError(f"claim-checked payload {digest} is missing from Postgres")
            self._remember(digest, data)
        return Payload.FromString(data)

    def _remember(self, digest: str, data: bytes) -> None:
        self._cache[digest] = data
        self._cache.move_to_end(digest)
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
