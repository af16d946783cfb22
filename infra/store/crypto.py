"""Encryption with keys from the environment: secrets at rest and Temporal payloads in flight.

One operator setting, `MINT_ENCRYPTION_KEY`, holds one or more keys (comma-separated, any text of 32+
characters). The first encrypts; all decrypt, so a key can be rotated by putting the new one first. Each use
(secrets, payloads) derives its own AES-256-GCM key with HKDF, so one ciphertext can never be replayed as
the other; a ciphertext may also be bound to a context (a payload to its workflow), and then opens only for it.
"""

from __future__ import annotations

import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION = b"m1"
KEY_ID_BYTES = 4
NONCE_BYTES = 12
MIN_KEY_CHARS = 32


class DecryptionError(ValueError):
    """Ciphertext that no configured key opens (a wrong or retired key, or tampering)."""


class UnknownKeyError(DecryptionError):
    """Ciphertext sealed with a key this process does not have: a configuration to fix, not a forgery."""


def parse_keys(raw: str | None) -> tuple[str, ...]:
    """The keys in `MINT_ENCRYPTION_KEY`, checked for length so a typo fails at start-up."""
    keys = tuple(k.strip() for k in (raw or "").split(",") if k.strip())
    for key in keys:
        if len(key) < MIN_KEY_CHARS:
            raise ValueError(
                f"MINT_ENCRYPTION_KEY: each key must be at least {MIN_KEY_CHARS} characters "
                "(try `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
            )
    return keys


class Cipher:
    """AES-256-GCM under keys derived for one `purpose`; the output names the key that sealed it."""

    def __init__(self, keys: tuple[str, ...], purpose: str):
        if not keys:
            raise ValueError("a Cipher needs at least one key")
        derived = [_derive(key, purpose) for key in keys]
        self._by_id = {_key_id(k): AESGCM(k) for k in derived}
        self._current_id = _key_id(derived[0])
        self._purpose = purpose.encode()

    def encrypt(self, plaintext: bytes, context: bytes = b"") -> bytes:
        """Sealed with the first key; `context` must be given again to decrypt (it is not stored)."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._by_id[self._current_id].encrypt(nonce, plaintext, self._associated(context))
        return VERSION + self._current_id + nonce + sealed

    def decrypt(self, ciphertext: bytes, context: bytes = b"") -> bytes:
        header = len(VERSION) + KEY_ID_BYTES
        if ciphertext[: len(VERSION)] != VERSION or len(ciphertext) < header + NONCE_BYTES:
            raise DecryptionError("not a Mint ciphertext")
        key = self._by_id.get(ciphertext[len(VERSION) : header])
        if key is None:
            raise UnknownKeyError("sealed with a key that is not in MINT_ENCRYPTION_KEY")
        nonce, sealed = ciphertext[header : header + NONCE_BYTES], ciphertext[header + NONCE_BYTES :]
        try:
            return key.decrypt(nonce, sealed, self._associated(context))
        except InvalidTag:
            raise DecryptionError(
                "ciphertext does not authenticate (tampered, or sealed for another purpose or context)"
            ) from None

    def _associated(self, context: bytes) -> bytes:
        # Without a context, exactly the purpose: what every ciphertext sealed before contexts existed used.
        return self._purpose + b"\0" + context if context else self._purpose


def _derive(key: str, purpose: str) -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"mint", info=purpose.encode())
    return hkdf.derive(key.encode())


def _key_id(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()[:KEY_ID_BYTES]
