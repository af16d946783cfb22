"""The codec server's work: Temporal payloads opened for the operator (decrypted, claim checks resolved), or
sealed as Mint's workers seal them, with Mint's own codec."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.api.common.v1 import Payload

from infra.store.crypto import DecryptionError
from infra.temporal.payload_codec import MintCodec
from services.clients import Clients
from services.errors import Invalid, ServiceError


async def reveal(clients: Clients, payloads: Sequence[Payload]) -> list[Payload]:
    """The payloads as the operator may see them; Invalid for one that cannot be decrypted."""
    try:
        return await _codec(clients).reveal(payloads)
    except DecryptionError as exc:
        raise Invalid(f"a payload could not be decrypted: {exc}") from None


async def seal(clients: Clients, payloads: Sequence[Payload]) -> list[Payload]:
    return await _codec(clients).encode(payloads)


def _codec(clients: Clients) -> MintCodec:
    codec = clients.temporal.data_converter.payload_codec
    if not isinstance(codec, MintCodec):
        raise ServiceError("this Temporal client does not use Mint's payload codec")
    return codec
