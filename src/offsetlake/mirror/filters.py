"""MM2's name filters: which consumer groups and topics a flow covers (pure: no Kafka, no Spark).

As Kafka's ``connect/mirror`` ``DefaultGroupFilter`` and ``DefaultTopicFilter`` decide: a name
passes when it fully matches the include regex and does not fully match the exclude regex (Java's
``Pattern.matcher(name).matches()``, not a search). Each default stays beside its rule, as
``DefaultGroupFilter`` keeps ``GROUPS_EXCLUDE_DEFAULT``; the topics' exclude default lives with
the other topic-naming rules in :mod:`offsetlake.mirror.policy`.

A pattern is compiled once, when the filter is built, so a bad regex fails there with an error
naming the option it came from rather than on the first name it meets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from offsetlake.errors import InvalidValueError
from offsetlake.mirror.policy import DEFAULT_TOPICS_EXCLUDE

DEFAULT_GROUPS_INCLUDE: Final = ".*"
"""MM2's ``groups`` default (``DefaultGroupFilter.GROUPS_INCLUDE_DEFAULT``): every group."""
DEFAULT_GROUPS_EXCLUDE: Final = "console-consumer-.*|connect-.*|__.*"
"""MM2's ``groups.exclude`` default (``DefaultGroupFilter.GROUPS_EXCLUDE_DEFAULT``, whose list MM2
joins with ``|``): console consumers, Kafka Connect's own groups and internal groups."""
DEFAULT_TOPICS_INCLUDE: Final = ".*"
"""MM2's ``topics`` default (``DefaultTopicFilter.TOPICS_INCLUDE_DEFAULT``): every topic."""


def compile_name_regex(pattern: str, option: str) -> re.Pattern[str]:
    """``pattern`` compiled; InvalidValueError naming ``option`` when it is not a valid regex."""
    try:
        return re.compile(pattern)
    except re.error as error:
        raise InvalidValueError(f"{option} {pattern!r} is not a valid regex: {error}") from None


def join_patterns(patterns: Iterable[str]) -> str:
    """A list of patterns as one regex, as MM2 compiles a list setting (``MirrorUtils.compilePatterns``)."""
    return "|".join(patterns)


@dataclass(frozen=True)
class NameFilter:
    """Names that fully match ``include`` and do not fully match ``exclude`` (None: exclude nothing)."""

    include: re.Pattern[str]
    exclude: re.Pattern[str] | None = None

    @classmethod
    def compile(
        cls,
        include: str,
        exclude: str | None,
        *,
        include_option: str = "include",
        exclude_option: str = "exclude",
    ) -> NameFilter:
        """The filter of two regexes; an empty or missing ``exclude`` excludes nothing. A bad regex
        raises InvalidValueError naming its option."""
        return cls(
            compile_name_regex(include, include_option),
            compile_name_regex(exclude, exclude_option) if exclude else None,
        )

    def matches(self, name: str) -> bool:
        return self.include.fullmatch(name) is not None and not (
            self.exclude is not None and self.exclude.fullmatch(name) is not None
        )

    def select(self, names: Iterable[str]) -> list[str]:
        """The names that pass, each once, sorted."""
        return sorted(name for name in set(names) if self.matches(name))


def group_filter(
    include: str = DEFAULT_GROUPS_INCLUDE, exclude: str | None = DEFAULT_GROUPS_EXCLUDE
) -> NameFilter:
    """MM2's group filter (options ``groups.include`` / ``groups.exclude``); by default MM2's own."""
    return NameFilter.compile(
        include, exclude, include_option="groups.include", exclude_option="groups.exclude"
    )


def topic_filter(
    include: str = DEFAULT_TOPICS_INCLUDE, exclude: str | None = DEFAULT_TOPICS_EXCLUDE
) -> NameFilter:
    """MM2's topic filter (options ``topics.include`` / ``topics.exclude``); by default MM2's own."""
    return NameFilter.compile(
        include, exclude, include_option="topics.include", exclude_option="topics.exclude"
    )
