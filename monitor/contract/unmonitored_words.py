"""What ``turbidity_unmonitored`` means, in the words every reader of it uses.

The alert, ``status``, the report and the field app each say why a pair's
contrast is unknown and what stormwatch still checks meanwhile; they say it
alike because the words are here, beside the vocabulary (``events.py``).
"""

from __future__ import annotations

from typing import Final

#: Each reason (``events.UnknownReason``) as a person reads it.
REASON_WORDS: Final[dict[str, str]] = {
    "downstream_stale": "no readings from the downstream probe",
    "downstream_pegged": "the downstream probe at its full scale",
    "background_missing": "no usable background (upstream) reading",
}


def reason_words(reason: str) -> str:
    return REASON_WORDS.get(reason, reason)


def still_checked(reason: str, absolute_ntu: float | None) -> str:
    """What of § 134-8C stormwatch still checks while the contrast is unknown for
    ``reason``: the pair is partly watched at most (``rules/turbidity/unmonitored.py``)."""
    if reason == "background_missing" and absolute_ntu is not None:
        return (f"only the downstream level: above {absolute_ntu:g} NTU it is still "
                "alerted (absolute limit); an increase over natural conditions below "
                "that goes unseen")
    if reason == "downstream_pegged":
        return ("a contrast that shows even at full scale is still alerted, but how large "
                "it is, and when it clears, is not known")
    return "nothing of the pair"
