"""The built-in permit profiles: YAML files beside this module, read once.

Each file is written in the vocabulary a ``custom`` profile uses
(``config/permits.py``), so the shipped rules and a user's are checked by the
same models. Reading package data is the one I/O of the rules, done once per
profile and kept (the files do not change while a process runs).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from ...config.permits import Profile
from ...contract.permits import BUILTIN_PROFILES


@cache
def builtin_profile(profile_id: str) -> Profile:
    """The built-in profile ``profile_id`` (one of ``BUILTIN_PROFILES``)."""
    if profile_id not in BUILTIN_PROFILES:
        raise KeyError(profile_id)
    folder = resources.files(__package__).joinpath("profiles")
    text = folder.joinpath(f"{profile_id}.yaml").read_text(encoding="utf-8")
    return Profile.model_validate(yaml.safe_load(text))
