"""Divergences found by this suite, reported, and not fixed yet: recognised so that runs stay green while
the report is open, and counted in the figures ("open bug …"). Each entry names its FINDINGS.md item.

Delete an entry once its fix lands: the suite then compares that case exactly again.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


def open_bug(argv: Sequence[bytes], real: Any, fake: Any, protocol: int) -> Optional[str]:
    """The FINDINGS.md id of an open bug explaining ``real`` vs ``fake`` for ``argv``, else None.

    No bug is open now (F7 was fixed: a RESP3 map with a repeated key is compared pair by pair)."""
    return None
