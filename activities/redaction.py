"""Masking secret values in whatever a call returns or raises, in every form the value may have taken.

A server, a library or an error message rarely echoes a value exactly as it was sent: a host name comes back
lower-cased, `repr` doubles a backslash, JSON escapes quotes and (with ensure_ascii) every non-ASCII letter,
URLs percent-encode with either hex case, HTML pages use character references, and a message cut at a length
keeps only the start of a value. So each value becomes one pattern in which every character may appear in any
of those encodings, matched regardless of case; whole-value encodings (base64, IDNA) are alternatives.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from temporalio.exceptions import ApplicationError

from infra.temporal import errors

HTML_NAMES = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}
SHORT_ESCAPES = {"\n": "n", "\r": "r", "\t": "t", "\b": "b", "\f": "f"}
# A value cut short at either end of a text is masked when at least this much of it (and half) is left.
LEAST_PARTIAL = 8


class Redactor:
    """Takes known secret values out of text and values, as `[secret NAME]`."""

    def __init__(self, secrets: dict[str, str]):
        # Longest first, so a value that contains another is replaced whole.
        ordered = sorted(((n, v) for n, v in secrets.items() if v), key=lambda item: -len(item[1]))
        self._masks = {f"s{i}": f"[secret {name}]" for i, (name, _) in enumerate(ordered)}
        alternatives = "|".join(f"(?P<s{i}>{value_pattern(value)})" for i, (_, value) in enumerate(ordered))
        # Where no form can start, the lookahead fails at once: several times faster on a large response.
        starts = "".join(sorted({c for _, value in ordered for c in _first_characters(value)}))
        self._pattern = (
            re.compile(f"(?=[{re.escape(starts)}])(?:{alternatives})", re.IGNORECASE) if ordered else None
        )
        self._partials = [(v.lower(), f"[secret {n}]") for n, v in ordered if len(v) > LEAST_PARTIAL]

    def __bool__(self) -> bool:
        """True when there is something to mask: the call carries secrets."""
        return self._pattern is not None

    def text(self, text: str) -> str:
        if self._pattern is None:
            return text
        text = self._pattern.sub(lambda m: self._masks[m.lastgroup or ""], text)
        for value, mask in self._partials:
            text = _cut_short(text, value, mask)
        return text

    def value(self, value: Any) -> Any:
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, int | float) and not isinstance(value, bool):
            masked = self.text(str(value))  # a numeric secret echoed as a JSON number
            return value if masked == str(value) else masked
        return value

    def error(self, exc: BaseException) -> ApplicationError:
        """`exc` as an error safe for Temporal history and logs (its cause chain is dropped)."""
        if isinstance(exc, ApplicationError):
            return ApplicationError(
                self.text(exc.message), type=exc.type, non_retryable=exc.non_retryable, category=exc.category
            )
        return errors.transient(self.text(f"{type(exc).__name__}: {exc}"), type(exc).__name__)


def value_pattern(value: str) -> str:
    """A regular expression (for re.IGNORECASE) matching `value` in any of the forms it may be echoed in."""
    whole = [re.escape(form) for form in _whole_forms(value)]
    return "|".join(["".join(_char_pattern(c) for c in value), *whole])


def _first_characters(value: str) -> set[str]:
    """Every character a form of `value` can start with."""
    escape_starts = {"%", "\\", "&"} | ({"+"} if value[0] == " " else set())
    return {value[0], *escape_starts, *(form[0] for form in _whole_forms(value))}


def _char_pattern(c: str) -> str:
    """One character in either case, as itself or escaped: `\\` runs stand for escapes that were escaped
    again (the repr of a JSON text), `%(?:25)*` for percent-encoding applied more than once."""
    variants = {v for v in (c, c.lower(), c.upper()) if len(v) == 1}  # an escape names one case
    forms = [form for v in sorted(variants) for form in _encodings(v)]
    return "(?:" + "|".join(dict.fromkeys(forms)) + ")"


def _encodings(c: str) -> list[str]:
    code = ord(c)
    forms = [re.escape(c), "".join(f"%(?:25)*{b:02x}" for b in c.encode("utf-8", "surrogatepass"))]
    forms += [rf"\\+{escape}" for escape in _backslash_escapes(c)]
    forms += [f"&#0*{code};", f"&#x0*{code:x};"]
    if c in HTML_NAMES:
        forms.append(f"&{HTML_NAMES[c]};")
    if c == " ":
        forms.append(r"\+")
    if 0x80 <= code < 0x100:
        forms.append(f"%(?:25)*{code:02x}")  # percent-encoded as Latin-1
    return forms


def _backslash_escapes(c: str) -> list[str]:
    """What follows the backslash when `repr`, `ascii`, `json.dumps` or a bytes repr escapes `c`."""
    code = ord(c)
    escapes = [SHORT_ESCAPES[c]] if c in SHORT_ESCAPES else []
    if not c.isalnum():
        escapes.append(re.escape(c))  # \" \' \/ \\
    if code < 0x100:
        escapes.append(f"x{code:02x}")
    if code < 0x10000:
        escapes.append(f"u{code:04x}")
    else:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        escapes += [f"U{code:08x}", rf"u{high:04x}\\+u{low:04x}"]
    if code >= 0x80:
        escapes.append(r"\\+".join(f"x{b:02x}" for b in c.encode("utf-8", "surrogatepass")))
    return escapes


def _whole_forms(value: str) -> list[str]:
    """Encodings of the value as a whole: base64 (standard and URL-safe, without padding), and IDNA when the
    value could be a host name."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = [base64.b64encode(raw).decode().rstrip("="), base64.urlsafe_b64encode(raw).decode().rstrip("=")]
    if not value.isascii():
        for codec in ("idna", "punycode"):
            try:
                forms.append(value.encode(codec).decode("ascii"))
            except UnicodeError:
                pass
    return [form for form in forms if len(form) >= 4]


def _cut_short(text: str, value: str, mask: str) -> str:
    """`text` with the start of `value` masked where the text ends with it, and its end where the text
    starts with it (a message cut at a length); `value` is lower-cased."""
    least = max(LEAST_PARTIAL, len(value) // 2)
    tail_start = max(0, len(text) - len(value) + 1)
    tail = text[tail_start:].lower()
    at = tail.find(value[:least])
    while at != -1:
        if value.startswith(tail[at:]):
            text = text[: tail_start + at] + mask
            break
        at = tail.find(value[:least], at + 1)
    head = text[: len(value) - 1].lower()
    at = head.find(value[-least:])
    while at != -1:
        if value.endswith(head[: at + least]):
            return mask + text[at + least :]
        at = head.find(value[-least:], at + 1)
    return text
