"""Modes and profiles for tests that load no policy plugin.

The kernel knows no mode or profile by name; the policy plugin declares ketch's own.
A plugin's tests that run without it (to stay small) can load :class:`TestVocabulary`
to get a read-only ``plan`` mode, a default ``build`` mode and two profiles.
"""

from __future__ import annotations

from typing import Any

from ketch.markers import hookimpl
from ketch.modes import Mode, Profile


class TestVocabulary:
    __test__ = False  # not a pytest test class

    @hookimpl
    def ketch_register_modes(self, register: Any) -> None:
        register(Mode("plan", "read-only", read_only=True))
        register(Mode("build", "everything", default=True))

    @hookimpl
    def ketch_register_profiles(self, register: Any) -> None:
        register(Profile("manual", "asks", default=True))
        register(Profile("full-access", "does not ask"))


# The module is a plugin too (``KETCH_LOAD=vocabulary=ketch.testing.vocabulary`` in a
# subprocess test of the real CLI).
_vocabulary = TestVocabulary()


@hookimpl
def ketch_register_modes(register: Any) -> None:
    _vocabulary.ketch_register_modes(register)


@hookimpl
def ketch_register_profiles(register: Any) -> None:
    _vocabulary.ketch_register_profiles(register)
