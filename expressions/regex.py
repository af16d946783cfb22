"""Regular expressions for expressions and templates: RE2, compiled and run within the work budget.

RE2 takes time linear in the text, but the factor is the pattern's. A big Unicode class compiles to a
tree of thousands of UTF-8 byte-range instructions, and a pattern that defeats RE2's DFA (`[ab]*a[ab]{30}c`)
makes it step every live thread on every byte. So:
- a pattern compiles under a memory cap and a program-size cap, and its first use in a step pays for the
  compilation by the program's size (every use in a step after that finds it compiled);
- a pass over a text costs its length times the pattern's width: the size of its program compiled for
  Latin-1, where a character class is a few instructions rather than a UTF-8 tree, which bounds the
  threads RE2 may step per byte. Up to FREE_WIDTH the DFA's states all fit in memory and a pass costs
  a few nanoseconds a character;
- each match costs the Python code google-re2 runs per match, plus the text copied out of it.
Compiled programs are shared by every execution on the worker, in a cache bounded by total memory: each
program may grow DFA state up to MAX_MEM.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import re2

from expressions.budget import CHARS_PER_UNIT, LimitExceeded, charge, charge_once
from expressions.data import check_length, check_text

MAX_PATTERN_LENGTH = 10_000
MAX_MEM = 1 << 20  # RE2's memory for one program and its DFAs; past about 48,000 instructions it refuses
MAX_PROGRAM_SIZE = 20_000  # instructions; `\p{L}{16}` is about 19,000
COMPILE_UNITS_PER_INSTRUCTION = 2  # the forward and the reverse program, about 0.4 us an instruction each
REGEX_CALL = 32
FREE_WIDTH = 12
WIDTH_PER_UNIT = 48  # about 10 ns an instruction of width a character, worst case measured
SCAN_CHARS_PER_UNIT = 16
MATCH_UNITS = 12  # google-re2's iterator: 3-10 us of Python code a match
GROUP_UNITS = 2
MAX_TEMPLATE_LENGTH = 1_000  # a replacement with group references (google-re2 caches each one it parses)
CACHE_BYTES = 64 << 20


@dataclass(frozen=True)
class Program:
    """A compiled pattern and what running it costs."""

    regex: Any
    size: int
    width: int

    def per_char(self) -> float:
        """Units a character of text costs one pass of this program."""
        return 1 / SCAN_CHARS_PER_UNIT + max(0, self.width - FREE_WIDTH) / WIDTH_PER_UNIT


def _options(latin1: bool = False) -> Any:
    options = re2.Options()
    options.max_mem = MAX_MEM
    options.log_errors = False
    if latin1:
        options.encoding = re2.Options.Encoding.LATIN1
    return options


def _build(pattern: str) -> Program:
    try:
        regex = re2.compile(pattern, _options())
    except re2.error as exc:
        if "too large" in _reason(exc):
            raise _too_large(pattern, f"over {MAX_PROGRAM_SIZE}") from None
        raise ValueError(f"bad regular expression {pattern[:100]!r}: {_reason(exc)}") from None
    finally:
        re2.purge()  # google-re2 memoizes 128 programs of its own, with no regard to their size
    size = regex.programsize
    if size > MAX_PROGRAM_SIZE:
        raise _too_large(pattern, str(size))
    return Program(regex, size, _width(pattern, size))


def _too_large(pattern: str, size: str) -> LimitExceeded:
    return LimitExceeded(
        f"regular expression {pattern[:100]!r} compiles to {size} instructions; the limit is "
        f"{MAX_PROGRAM_SIZE} (large Unicode classes and counted repetitions add up)"
    )


def _width(pattern: str, size: int) -> int:
    try:
        latin1 = re2.compile(pattern.encode(), _options(latin1=True))
    except re2.error:
        return size  # no Latin-1 form: assume the worst
    finally:
        re2.purge()
    return min(int(latin1.programsize), size)


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)


class _Cache:
    """Compiled programs by pattern, least recently used first out, bounded by the memory they may hold."""

    def __init__(self, limit: int = CACHE_BYTES):
        self.limit = limit
        self.used = 0
        self._programs: collections.OrderedDict[str, Program] = collections.OrderedDict()
        self._lock = threading.Lock()  # workflows run on several threads

    def get(self, pattern: str) -> Program:
        with self._lock:
            program = self._programs.get(pattern)
            if program is not None:
                self._programs.move_to_end(pattern)
                return program
        program = _build(pattern)
        with self._lock:
            if pattern not in self._programs:
                self._programs[pattern] = program
                self.used += self.weight(pattern)
            while self.used > self.limit:
                evicted, _ = self._programs.popitem(last=False)
                self.used -= self.weight(evicted)
        return program

    @staticmethod
    def weight(pattern: str) -> int:
        return MAX_MEM + 4 * len(pattern)

    def __len__(self) -> int:
        return len(self._programs)


CACHE = _Cache()


def program(pattern: Any) -> Program:
    """The compiled `pattern`, charged: a call, and the compilation once per step."""
    if not isinstance(pattern, str):
        raise ValueError(f"a regular expression must be text, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise LimitExceeded(f"a regular expression may be at most {MAX_PATTERN_LENGTH} characters")
    charge(REGEX_CALL + len(pattern) // CHARS_PER_UNIT)
    compiled = CACHE.get(pattern)
    charge_once(("regex", pattern), compiled.size * COMPILE_UNITS_PER_INSTRUCTION)
    return compiled


def _scanned(pattern: Any, text: Any) -> Program:
    if not isinstance(text, str):
        raise ValueError(f"a regular expression searches text, not {type(text).__name__}")
    compiled = program(pattern)
    charge(int(len(check_text(text)) * compiled.per_char()))
    return compiled


def search(pattern: str, text: str) -> Any:
    return _scanned(pattern, text).regex.search(text)


def match(pattern: str, text: str) -> Any:
    return _scanned(pattern, text).regex.match(text)


def fullmatch(pattern: str, text: str) -> Any:
    return _scanned(pattern, text).regex.fullmatch(text)


def matches(pattern: str, text: str) -> bool:
    """Julep's match_regex: whether the whole text matches."""
    return fullmatch(pattern, text) is not None


def _matches(compiled: Program, text: str, limit: int = 0, groups: bool = False) -> Iterator[Any]:
    """The matches, each charged as it comes: the iterator's work per match and the text copied out of it
    (the whole match, or each group when `groups`)."""
    count = compiled.regex.groups
    for n, found in enumerate(compiled.regex.finditer(text), 1):
        copied = group_chars(found, range(1, count + 1)) if groups else group_chars(found, (0,))
        charge(MATCH_UNITS + GROUP_UNITS * count + copied // CHARS_PER_UNIT)
        yield found
        if n == limit:
            return


def group_chars(found: Any, groups: Iterable[Any]) -> int:
    """How many characters copying `groups` (numbers or names) out of match `found` copies."""
    names = None
    total = 0
    for group in groups:
        if not isinstance(group, int):
            names = names or found.re.groupindex
            group = names.get(group, 0)
        if isinstance(group, int) and 0 <= group <= found.re.groups:
            start, end = found.span(group)
            total += max(end - start, 0)
    return total


def findall(pattern: str, text: str) -> list[Any]:
    compiled = _scanned(pattern, text)
    groups = compiled.regex.groups
    if groups == 0:
        return [found.group() for found in _matches(compiled, text)]
    if groups == 1:
        return [found.groups(default="")[0] for found in _matches(compiled, text, groups=True)]
    return [found.groups(default="") for found in _matches(compiled, text, groups=True)]


def split(pattern: str, text: str, maxsplit: int = 0) -> list[Any]:
    compiled = _scanned(pattern, text)
    if maxsplit < 0:
        return [text]
    pieces, end = [], 0
    for found in _matches(compiled, text, maxsplit, groups=True):
        pieces.append(text[end : found.start()])
        pieces.extend(found.group(g) for g in range(1, compiled.regex.groups + 1))
        end = found.end()
    pieces.append(text[end:])
    return pieces


def sub(pattern: str, replacement: str, text: str, count: int = 0) -> str:
    """re.sub with the result's length checked as it is assembled, before it is joined."""
    return subn(pattern, replacement, text, count)[0]


def subn(pattern: str, replacement: str, text: str, count: int = 0) -> tuple[str, int]:
    """re.subn: the text with the matches replaced, and how many were."""
    compiled = _scanned(pattern, text)
    if not isinstance(replacement, str):
        raise ValueError("the replacement must be text")
    template = "\\" in replacement
    if template and len(replacement) > MAX_TEMPLATE_LENGTH:
        raise LimitExceeded(
            f"a replacement with group references may be at most {MAX_TEMPLATE_LENGTH} characters"
        )
    pieces, end, length, replaced = [], 0, 0, 0
    for found in _matches(compiled, text, max(count, 0)):
        replaced += 1
        # Each group reference copies at most the match once more.
        estimate = len(replacement) + replacement.count("\\") * (found.end() - found.start())
        length += found.start() - end + estimate
        check_length(length + len(text) - found.end())
        charge(estimate // CHARS_PER_UNIT)
        pieces.append(text[end : found.start()])
        pieces.append(found.expand(replacement) if template else replacement)
        end = found.end()
    pieces.append(text[end:])
    return "".join(pieces), replaced


def finditer(pattern: str, text: str) -> list[Any]:
    """re.finditer's matches, as a list (an iterator would slip past the budget)."""
    compiled = _scanned(pattern, text)
    return list(_matches(compiled, text))


def escape(text: str) -> str:
    """re.escape: a backslash before each special character, `\\x00` for a NUL."""
    check_length(2 * len(text) + 2 * text.count("\0"))
    charge(1 + len(text) // CHARS_PER_UNIT)
    return str(re2.escape(text))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "search": search,
    "match": match,
    "fullmatch": fullmatch,
    "findall": findall,
    "finditer": finditer,
    "subn": subn,
    "split": split,
    "sub": sub,
    "escape": escape,
}
