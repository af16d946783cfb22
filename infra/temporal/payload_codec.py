"""Mint's Temporal data converter: large payloads claim-checked into Postgres, then every payload sealed.

With MINT_ENCRYPTION_KEY set, Temporal (its database, its UI, its CLI) holds only ciphertext of everything
an execution carries: inputs, step values, tool requests, model answers, errors' details. Sealing is also
how a Mint process knows that a payload comes from Mint: whoever can reach Temporal can start a workflow or
send a signal, but cannot seal. So a payload that is not sealed with one of the keys (plain JSON from a bare
Temporal client, a forgery, a sealed payload pasted from another workflow) is refused: it never becomes a
value. The Temporal UI shows values only through Mint's codec server (api/routes/codec.py).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, Self

import asyncpg
import temporalio.converter
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    CompositePayloadConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    JSONPlainPayloadConverter,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
)
from temporalio.exceptions import ApplicationError

from infra.store.crypto import Cipher, DecryptionError, UnknownKeyError
from infra.temporal.claim_check import THRESHOLD_BYTES, ClaimCheckCodec
from infra.temporal.payload_json import json_converter

ENCRYPTED = b"binary/encrypted"
REFUSED = b"mint/refused"
# The workflow a payload was sealed for: in the clear (the codec server needs it, and Temporal shows the id
# anyway), and authenticated, as the ciphertext's associated data.
WORKFLOW_ID = "mint-workflow-id"
PURPOSE = "mint payloads"


def refused(reason: str) -> Payload:
    """What a payload Mint does not accept decodes to: its conversion raises (MintPayloadConverter).

    A stand-in rather than an exception from the codec, so that the SDK decides by use, and a forgery cannot
    wedge a legitimate execution: a workflow whose input is refused fails at once, a refused signal is
    dropped (the execution carries on), a refused query fails. An exception here would instead fail the
    whole workflow task, again at every retry."""
    return Payload(metadata={"encoding": REFUSED}, data=reason.encode())


class EncryptionCodec(PayloadCodec, WithSerializationContext):
    """AES-GCM over the whole serialized payload (metadata included, so the encoding is hidden too), bound
    to the workflow it travels for when the SDK says which (its serialization context)."""

    def __init__(self, keys: tuple[str, ...]):
        self._cipher = Cipher(keys, PURPOSE)
        self._workflow_id = ""

    def with_context(self, context: SerializationContext) -> Self:
        bound = copy.copy(self)  # shares the cipher: the SDK asks for a bound codec per workflow task
        bound._workflow_id = getattr(context, "workflow_id", None) or ""
        return bound

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._seal(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.open(p) for p in payloads]

    def _seal(self, payload: Payload) -> Payload:
        sealed = Payload(metadata={"encoding": ENCRYPTED})
        workflow_id = self._workflow_id.encode()
        if workflow_id:
            sealed.metadata[WORKFLOW_ID] = workflow_id
        sealed.data = self._cipher.encrypt(payload.SerializeToString(), workflow_id)
        return sealed

    def open(self, payload: Payload) -> Payload:
        """The payload this one seals, or a refusal. A key this process lacks raises instead
        (UnknownKeyError): that is configuration to fix, and the workflow task retries until it is."""
        if payload.metadata.get("encoding") != ENCRYPTED:
            return refused("it is not sealed with MINT_ENCRYPTION_KEY")
        # Payloads sealed before they were bound to a workflow carry no id; they still open, for any.
        bound = payload.metadata.get(WORKFLOW_ID, b"")
        if bound and self._workflow_id and bound != self._workflow_id.encode():
            return refused(f"it was sealed for workflow {bound.decode(errors='replace')!r}")
        try:
            return Payload.FromString(self._cipher.decrypt(payload.data, bound))
        except UnknownKeyError:
            raise
        except DecryptionError as exc:
            return refused(str(exc))


class MintCodec(PayloadCodec, WithSerializationContext):
    """Claim check first (so what is stored in Postgres is the plain payload), then encryption."""

    def __init__(self, claim_check: ClaimCheckCodec, encryption: EncryptionCodec | None):
        self.claim_check = claim_check
        self.encryption = encryption

    def with_context(self, context: SerializationContext) -> Self:
        if self.encryption is None:
            return self
        return type(self)(self.claim_check, self.encryption.with_context(context))

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

    async def reveal(self, payloads: Sequence[Payload]) -> list[Payload]:
        """What an operator sees (the codec server): sealed payloads opened, others shown as they are (the
        SDK's own local-activity bookkeeping is plain, and so is a forgery worth looking at)."""
        if self.encryption is None:
            return await self.decode(payloads)
        encryption = self.encryption
        opened = [encryption.open(p) if p.metadata.get("encoding") == ENCRYPTED else p for p in payloads]
        return await self.claim_check.decode(opened)


class RefusedPayloadConverter(EncodingPayloadConverter):
    """Turns a refused payload into a non-retryable error, wherever the SDK converts it."""

    @property
    def encoding(self) -> str:
        return REFUSED.decode()

    def to_payload(self, value: Any) -> Payload | None:
        return None  # never chosen for a value

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        reason = payload.data.decode(errors="replace")
        raise ApplicationError(
            f"refused a Temporal payload: {reason}", type="UnsealedPayload", non_retryable=True
        )


class MintPayloadConverter(CompositePayloadConverter):
    """The SDK's default conversions (JSON without its copies: infra/temporal/payload_json.py), and refusals."""

    def __init__(self) -> None:
        converters = [
            json_converter() if isinstance(c, JSONPlainPayloadConverter) else c
            for c in DefaultPayloadConverter.default_encoding_payload_converters
        ]
        super().__init__(*converters, RefusedPayloadConverter())


def data_converter(
    pool: asyncpg.Pool, threshold: int = THRESHOLD_BYTES, keys: tuple[str, ...] = ()
) -> temporalio.converter.DataConverter:
    """The SDK's JSON conversion with Mint's codec; every client (API, worker, replayer) uses this."""
    codec = MintCodec(ClaimCheckCodec(pool, threshold), EncryptionCodec(keys) if keys else None)
    return dataclasses.replace(
        temporalio.converter.default(), payload_codec=codec, payload_converter_class=MintPayloadConverter
    )
