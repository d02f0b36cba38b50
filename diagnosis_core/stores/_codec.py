"""AES-GCM payload codec: facts at rest unreadable without the host's key (spec §16).

Each payload is sealed as ``nonce (12 random bytes) || ciphertext+tag`` with
AES-GCM under the host's 128-, 192- or 256-bit key, and the payload's
``context`` (its kind, run id and the clear columns stored beside it,
``sealed_context`` in ``_base.py``) as associated data: a sealed payload
copied to another row, a relabelled column, a flipped bit, another key — each
fails to decode, and the store reports a :class:`StoreError` naming the
record (a listing shows the run ``invalid``). Needs the ``crypto`` extra
(``cryptography``).
"""

from __future__ import annotations

import os
from typing import Any

from ..journal import StoreError

__all__ = ["AesGcmCodec"]


class AesGcmCodec:
    """A :class:`PayloadCodec` sealing with AES-GCM (``cryptography``'s ``AESGCM``)."""

    name = "aesgcm"

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes | bytearray) or len(key) not in (16, 24, 32):
            raise StoreError("key: expected 16, 24 or 32 bytes (AES-128, -192 or -256)")
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError:
            raise StoreError(
                "the AES-GCM codec needs cryptography: install the crypto extra "
                "(in the diagnosis_core checkout: pip install -e '.[crypto]')"
            ) from None
        self._aead: Any = AESGCM(bytes(key))

    def encode(self, data: bytes, context: bytes, /) -> bytes:
        """``nonce || AES-GCM(data)`` with ``context`` authenticated."""
        nonce = os.urandom(12)
        sealed: bytes = self._aead.encrypt(nonce, data, context)
        return nonce + sealed

    def decode(self, data: bytes, context: bytes, /) -> bytes:
        """The plaintext; raises when the key, the context or the bytes differ."""
        plain: bytes = self._aead.decrypt(data[:12], data[12:], context)
        return plain
