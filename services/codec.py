"""The codec server's work: Temporal payloads opened for the operator (decrypted, claim checks resolved), or
sealed as Mint's workers seal them, with Mint's own codec."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.client import Client

from infra.store.crypto import DecryptionError
from infra.temporal.payload_codec import MintCodec
from services.errors import Invalid, ServiceError


async def reveal(temporal: Client, payloads: Sequence[Payload]) -> list[Payload]:
    """The payloads as the operator may see them; Invalid for one that cannot be decrypted."""
    try:
        return await _codec(temporal).reveal(payloads)
    except DecryptionError as exc:
        raise Invalid(f"a payload could not be decrypted: {exc}") from None


async def seal(temporal: Client, payloads: Sequence[Payload]) -> list[Payload]:
    return await _codec(temporal).encode(payloads)


def _codec(temporal: Client) -> MintCodec:
    codec = temporal.data_converter.payload_codec
    if not isinstance(codec, MintCodec):
        raise ServiceError("this Temporal client does not use Mint's payload codec")
    return codec
