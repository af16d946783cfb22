"""Mint's Temporal data converter: large payloads claim-checked into Postgres, then every payload encrypted.

With MINT_ENCRYPTION_KEY set, Temporal (its database, its UI, its CLI) holds only ciphertext of everything
an execution carries: inputs, step values, tool requests, model answers, errors' details. The Temporal UI
shows the values only through Mint's codec server (`/codec/decode`, api/routes/codec.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import asyncpg
import temporalio.converter
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from mint.claim_check import THRESHOLD_BYTES, ClaimCheckCodec
from mint.crypto import Cipher, DecryptionError

ENCRYPTED = b"binary/encrypted"
PURPOSE = "mint payloads"


class EncryptionCodec(PayloadCodec):
    """AES-GCM over the whole serialized payload (metadata included, so the encoding is hidden too)."""

    def __init__(self, keys: tuple[str, ...]):
        self._cipher = Cipher(keys, PURPOSE)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(metadata={"encoding": ENCRYPTED}, data=self._cipher.encrypt(p.SerializeToString()))
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        # Payloads written before encryption was turned on still decode: they pass through as they are.
        return [
            Payload.FromString(self._cipher.decrypt(p.data)) if p.metadata.get("encoding") == ENCRYPTED else p
            for p in payloads
        ]


class MintCodec(PayloadCodec):
    """Claim check first (so what is stored in Postgres is the plain payload), then encryption."""

    def __init__(self, claim_check: ClaimCheckCodec, encryption: EncryptionCodec | None):
        self.claim_check = claim_check
        self.encryption = encryption

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        checked = await self.claim_check.encode(payloads)
        return await self.encryption.encode(checked) if self.encryption else checked

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if self.encryption:
            opened = await self.encryption.decode(payloads)
        elif any(p.metadata.get("encoding") == ENCRYPTED for p in payloads):
            raise DecryptionError("this payload is encrypted, and this process has no MINT_ENCRYPTION_KEY")
        else:
            opened = list(payloads)
        return await self.claim_check.decode(opened)


def data_converter(
    pool: asyncpg.Pool, threshold: int = THRESHOLD_BYTES, keys: tuple[str, ...] = ()
) -> temporalio.converter.DataConverter:
    """The SDK's JSON conversion with Mint's codec; every client (API, worker, replayer) uses this."""
    codec = MintCodec(ClaimCheckCodec(pool, threshold), EncryptionCodec(keys) if keys else None)
    return dataclasses.replace(temporalio.converter.default(), payload_codec=codec)
