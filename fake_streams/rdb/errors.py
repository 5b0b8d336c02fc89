"""The two ways a RESTORE payload is refused (the server's two error replies)."""

from __future__ import annotations


class PayloadVersionError(ValueError):
    """The footer is wrong: too short, an RDB version this server does not load, or a CRC64 mismatch
    (``verifyDumpPayload``): ``ERR DUMP payload version or checksum are wrong``."""


class PayloadFormatError(ValueError):
    """The body does not decode into a value (``rdbLoadObjectType`` / ``rdbLoadObject`` failed):
    ``ERR Bad data format``."""
