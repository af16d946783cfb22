"""Julep v1's `csv` module for expressions: readers and writers over strings, in the sandbox.

Julep's `csv.reader(text)` and `csv.DictReader(text)` read a string; here they give the rows as a list (what
iterating Julep's reader gives). `csv.writer(text)` and `csv.DictWriter(text, fieldnames)` write into a
string as Julep's do (`writerow` answers the characters written); `getvalue()` reads what was written, which
Julep offered no way to. Dialects are named (`csv.excel` is "excel"); registering one is refused: the registry
is the worker's, shared by every execution and not replayed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from expressions.budget import CHARS_PER_UNIT, MAX_ELEMENTS, LimitExceeded, charge
from expressions.data import check_length, check_text
from expressions.operators import safe_str

DIALECTS = ("excel", "excel-tab", "unix")
FIELDS_PER_UNIT = 4  # a str object per field, built by the C reader
ROW_UNITS = 2  # a list (or, for DictReader, a dict built in Python code) per row
DICT_ROW_UNITS = 8
# Python 3.11's csv knows QUOTE_ALL..QUOTE_NONE (0-3); QUOTE_NOTNULL and QUOTE_STRINGS (4, 5) came in 3.12.
QUOTING = {"QUOTE_MINIMAL": 0, "QUOTE_ALL": 1, "QUOTE_NONNUMERIC": 2, "QUOTE_NONE": 3}
QUOTING_312 = {"QUOTE_NOTNULL": 4, "QUOTE_STRINGS": 5}


def _check_options(dialect: str, kwargs: Mapping[str, object]) -> None:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown csv dialect {dialect!r}; the dialects are {', '.join(DIALECTS)}")
    for key, value in kwargs.items():
        if isinstance(value, str) and len(value) > 1 and key != "lineterminator":
            raise TypeError(f'"{key}" must be a 1-character string')
        if key == "lineterminator" and (not isinstance(value, str) or len(value) > 8):
            raise ValueError("lineterminator must be a string of at most 8 characters")


def _charge_read(text: str, delimiter: str = ",") -> None:
    """A pass of the C reader, and a field (a new string) per delimiter or line at most."""
    fields = text.count(delimiter) + text.count("\n") + text.count("\r") + 1
    if fields > MAX_ELEMENTS:
        raise LimitExceeded(f"csv text of over {MAX_ELEMENTS} fields")
    charge(len(text) // CHARS_PER_UNIT + fields // FIELDS_PER_UNIT)


def reader(data: str, dialect: str = "excel", **kwargs: Any) -> list[list[str]]:
    """csv.reader over a string: its rows."""
    _check_options(dialect, kwargs)
    _charge_read(check_text(data), kwargs.get("delimiter") or ",")
    rows = list(csv.reader(io.StringIO(data), dialect, **kwargs))
    charge(len(rows) * ROW_UNITS)
    return rows


def dict_reader(
    data: str,
    fieldnames: Any = None,
    restkey: Any = None,
    restval: Any = None,
    dialect: str = "excel",
    **kwargs: Any,
) -> list[dict[str, object]]:
    """csv.DictReader over a string: a dict per row, keyed by the first row (or by `fieldnames`)."""
    _check_options(dialect, kwargs)
    _charge_read(check_text(data), kwargs.get("delimiter") or ",")
    names = None if fieldnames is None else [safe_str(n) for n in fieldnames]
    rows = csv.DictReader(io.StringIO(data), names, restkey, restval, dialect, **kwargs)
    result = []
    for row in rows:
        charge(DICT_ROW_UNITS + len(row))
        result.append(row)
    return result


class Writer:
    """csv.writer over a string (methods are reached through methods.py, each call charged there)."""

    def __init__(self, data: str = "", dialect: str = "excel", **kwargs: Any):
        self._buffer = io.StringIO()
        self._buffer.write(check_text(data))
        self._buffer.seek(0)  # Julep's writer wrote over the text it was given, from its start
        self._length = len(data)
        _check_options(dialect, kwargs)
        self._writer = csv.writer(self._buffer, dialect, **kwargs)

    def writerow(self, row: Any) -> int:
        fields = [
            field if isinstance(field, str | int | float) or field is None else safe_str(field)
            for field in row
        ]
        self._room(fields)
        return int(self._writer.writerow(fields))

    def writerows(self, rows: Any) -> None:
        for row in rows:
            self.writerow(row)

    def getvalue(self) -> str:
        charge(1 + self._length // CHARS_PER_UNIT)
        return self._buffer.getvalue()

    def _room(self, fields: list[Any]) -> None:
        """A row writes at most twice its text (every quote doubled), plus quotes and separators."""
        written = sum(2 * len(safe_str(f)) + 3 for f in fields) + 8
        self._length += written
        check_length(self._length)
        charge(1 + len(fields) + written // CHARS_PER_UNIT)


class DictWriter(Writer):
    """csv.DictWriter over a string: rows are dicts, written in the order of `fieldnames`."""

    def __init__(
        self,
        data: str,
        fieldnames: Any,
        restval: Any = "",
        extrasaction: str = "raise",
        dialect: str = "excel",
        **kwargs: Any,
    ):
        super().__init__(data, dialect, **kwargs)
        if extrasaction not in ("raise", "ignore"):
            raise ValueError(f"extrasaction ({extrasaction}) must be 'raise' or 'ignore'")
        self.fieldnames = [safe_str(name) for name in fieldnames]
        self._restval, self._extras = restval, extrasaction

    def writeheader(self) -> int:
        return Writer.writerow(self, self.fieldnames)

    def writerow(self, row: Any) -> int:
        if not isinstance(row, dict):
            raise TypeError("a DictWriter writes dicts")
        if self._extras == "raise" and (wrong := [k for k in row if k not in self.fieldnames]):
            raise ValueError(f"dict contains fields not in fieldnames: {', '.join(map(repr, wrong))}")
        return Writer.writerow(self, [row.get(name, self._restval) for name in self.fieldnames])


def get_dialect(name: str) -> dict[str, object]:
    """The settings of a named dialect."""
    _check_options(name, {})
    found = csv.get_dialect(name)
    keys = "delimiter quotechar escapechar doublequote skipinitialspace lineterminator quoting strict"
    return {key: getattr(found, key) for key in keys.split()}


def field_size_limit(*limit: Any) -> int:
    """The longest field the reader accepts; setting it is refused (it is the worker's, for every execution)."""
    if limit:
        raise ValueError(
            "csv.field_size_limit cannot be changed in Mint: it would change it for every execution"
        )
    return csv.field_size_limit()
