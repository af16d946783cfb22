"""Python 3.12's f-strings (PEP 701) on any Python Mint runs on.

Julep evaluated expressions on Python 3.12, so its tasks reuse an f-string's own quotes inside a replacement
field (`f"{_["id"]}"`) and put backslashes there (`f"{'\\n'.join(xs)}"`), which Python 3.11's parser refuses.
When it does, `parse` reads each f-string itself into the nodes Python 3.12 builds (ast.JoinedStr and
ast.FormattedValue: conversions, format specs with their own fields, `=` for debugging) and has `ast.parse`
read the rest, with a placeholder name where each run of adjacent string literals holding an f-string was.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

# How deeply f-strings may nest in one another (each level is read again by the level above).
MAX_NESTING = 20
_FSTRING_START = re.compile(r"(?<![\w])(?:[fF][rR]?|[rR][fF])['\"]")
_STRING_PREFIXES = frozenset({"", "r", "u", "b", "br", "rb", "f", "fr", "rf"})
_QUOTES = "'\""
_CLOSING = {"(": ")", "[": "]", "{": "}"}


def parse(source: str) -> ast.expr:
    """Parse `source` as one expression, reading PEP 701 f-strings where this Python's parser cannot."""
    try:
        return ast.parse(source, mode="eval").body
    except SyntaxError:
        if not _FSTRING_START.search(source):
            raise
    return _parse(source, 0)


@dataclass
class _Field:
    source: str  # the expression's text
    conversion: int = -1
    spec: list[str | _Field] | None = None
    debug: str = ""  # `{x = }`: the text shown before the value


@dataclass
class _Literal:
    prefix: str  # lower case
    text: str = ""  # a plain string's source, quotes included
    parts: list[str | _Field] = field(default_factory=list)  # an f-string's decoded text and fields


def _parse(source: str, depth: int) -> ast.expr:
    if depth > MAX_NESTING:
        raise SyntaxError(f"f-strings nest more than {MAX_NESTING} levels deep")
    text, strings = _Rewriter(source, depth).rewrite()
    tree = ast.parse(text.strip(), mode="eval")
    if strings:
        tree = _Substitute(strings).visit(tree)
        ast.fix_missing_locations(tree)
    return tree.body


class _Substitute(ast.NodeTransformer):
    def __init__(self, strings: dict[str, ast.expr]):
        self.strings = strings

    def visit_Name(self, node: ast.Name) -> ast.expr:  # noqa: N802 - ast's naming
        return self.strings.get(node.id, node)


class _Rewriter:
    """One pass over an expression's text: string literals are read whole, f-strings into parts."""

    def __init__(self, source: str, depth: int):
        self.source = source
        self.depth = depth
        self.at = 0
        self.open_fstrings = depth  # f-strings being read, the ones around this text included
        base = "mint_fstring"
        while base in source:
            base += "_"
        self.base = base

    def rewrite(self) -> tuple[str, dict[str, ast.expr]]:
        """The text with each run of string literals that holds an f-string replaced by a placeholder."""
        source, out = self.source, []
        strings: dict[str, ast.expr] = {}
        while self.at < len(source):
            start = self.at
            if self._string_starts():
                literals = self._string_run()
                if any(lit.prefix.count("f") for lit in literals):
                    name = f"{self.base}{len(strings)}"
                    strings[name] = _joined(literals, self.depth)
                    out.append(f" {name} ")
                else:
                    out.append(source[start : self.at])
            elif source[start] == "#":
                end = source.find("\n", start)
                self.at = len(source) if end < 0 else end
                out.append(source[start : self.at])
            else:
                self.at = self._token_end(start)
                out.append(source[start : self.at])
        return "".join(out), strings

    # Reading strings ------------------------------------------------------------------------------------

    def _token_end(self, start: int) -> int:
        """The end of the name or number at `start`, or of the one character there."""
        end = start
        while end < len(self.source) and (self.source[end].isalnum() or self.source[end] == "_"):
            end += 1
        return max(end, start + 1)

    def _string_starts(self) -> bool:
        if self.source[self.at] in _QUOTES:
            return True
        end = self._token_end(self.at)
        if end >= len(self.source) or self.source[end] not in _QUOTES:
            return False
        return self.source[self.at : end].lower() in _STRING_PREFIXES

    def _string_run(self) -> list[_Literal]:
        """Adjacent string literals (`'a' f'{b}'`), which Python joins into one."""
        literals = [self._literal()]
        while True:
            resume = self.at
            while self.at < len(self.source) and self.source[self.at] in " \t\r\n\\":
                self.at += 1
            if self.at < len(self.source) and self._string_starts():
                literals.append(self._literal())
            else:
                self.at = resume
                return literals

    def _literal(self) -> _Literal:
        start = self.at
        while self.source[self.at] not in _QUOTES:
            self.at += 1
        prefix = self.source[start : self.at].lower()
        quote = self.source[self.at] * (3 if self.source.startswith(self.source[self.at] * 3, self.at) else 1)
        self.at += len(quote)
        if "f" not in prefix:
            self._skip_string(quote)
            return _Literal(prefix, text=self.source[start : self.at])
        self.open_fstrings += 1
        if self.open_fstrings > MAX_NESTING:
            raise SyntaxError(f"f-strings nest more than {MAX_NESTING} levels deep")
        parts = _FStringReader(self, quote, "r" in prefix).body()
        self.open_fstrings -= 1
        return _Literal(prefix, parts=parts)

    def _skip_string(self, quote: str) -> None:
        source = self.source
        while True:
            if self.at >= len(source) or (len(quote) == 1 and source[self.at] == "\n"):
                raise SyntaxError("unterminated string literal")
            if source[self.at] == "\\":
                self.at += 2
            elif source.startswith(quote, self.at):
                self.at += len(quote)
                return
            else:
                self.at += 1


class _FStringReader:
    """Reads the body of one f-string, its quote already passed, into text and fields."""

    def __init__(self, rewriter: _Rewriter, quote: str, raw: bool):
        self.r = rewriter
        self.quote = quote
        self.raw = raw

    def body(self, in_spec: bool = False) -> list[str | _Field]:
        """Text and fields up to the closing quote (or, in a format spec, up to its closing brace)."""
        source = self.r.source
        parts: list[str | _Field] = []
        chunk: list[str] = []
        while True:
            at = self.r.at
            if at >= len(source) or (len(self.quote) == 1 and source[at] == "\n"):
                raise SyntaxError("f-string: expecting '}'" if in_spec else "unterminated f-string literal")
            char = source[at]
            if source.startswith(self.quote, at):
                if in_spec:
                    raise SyntaxError("f-string: expecting '}'")
                self.r.at += len(self.quote)
                return [*parts, *self._text(chunk)]
            if char == "\\" and not in_spec:
                chunk.append(self._escape(at))
            elif char == "{" and source.startswith("{{", at) and not in_spec:
                chunk.append("{")
                self.r.at += 2
            elif char == "{":
                parts.extend(self._text(chunk))
                chunk = []
                self.r.at += 1
                parts.append(self._field())
            elif char == "}" and in_spec:
                return [*parts, *self._text(chunk)]
            elif char == "}":
                if not source.startswith("}}", at):
                    raise SyntaxError("f-string: single '}' is not allowed")
                chunk.append("}")
                self.r.at += 2
            else:
                chunk.append(char)
                self.r.at += 1

    def _escape(self, at: int) -> str:
        """A backslash and what it escapes, as source text for `_text` to decode."""
        source = self.r.source
        if not self.raw and source.startswith("N{", at + 1):  # a named character: its braces are no field
            end = source.find("}", at)
            if end < 0:
                raise SyntaxError("unterminated f-string literal")
            self.r.at = end + 1
            return source[at : end + 1]
        if at + 1 < len(source) and source[at + 1] in "{}":
            self.r.at += 1  # the brace still opens or closes a field: the backslash is just a backslash
            return "\\" if self.raw else "\\\\"
        self.r.at += 2
        return source[at : at + 2]

    def _text(self, chunk: list[str]) -> list[str]:
        text = "".join(chunk)
        if not text:
            return []
        if self.raw:
            return [text]
        # Escapes decoded as Python decodes them in a string with the same quotes (a final "x" keeps a
        # quote character at the end of the text from closing the literal early).
        return [ast.literal_eval(self.quote + text + "x" + self.quote)[:-1]]

    def _field(self) -> _Field:
        source, start = self.r.source, self.r.at
        end = self._expression_end()
        expression = source[start:end]
        if not expression.strip():
            raise SyntaxError(f"f-string: valid expression required before {source[end]!r}")
        found = _Field(expression)
        if source[end] == "=":
            self.r.at = end + 1
            while self.r.at < len(source) and source[self.r.at].isspace():
                self.r.at += 1
            found.debug = source[start : self.r.at]
        if source.startswith("!", self.r.at):
            found.conversion = self._conversion()
        if source.startswith(":", self.r.at):
            self.r.at += 1
            found.spec = self.body(in_spec=True)
        if not source.startswith("}", self.r.at):
            raise SyntaxError("f-string: expecting '}'")
        self.r.at += 1
        if found.debug and found.conversion == -1 and found.spec is None:
            found.conversion = ord("r")
        return found

    def _conversion(self) -> int:
        source, at = self.r.source, self.r.at
        letter = source[at + 1 : at + 2]
        if not letter or letter in "}:":
            raise SyntaxError("f-string: missing conversion character")
        if letter not in ("s", "r", "a"):
            raise SyntaxError(f"f-string: invalid conversion character {letter!r}: expected 's', 'r', or 'a'")
        if source[at + 2 : at + 3] not in (":", "}"):
            raise SyntaxError("f-string: expecting ':' or '}'")
        self.r.at = at + 2
        return ord(letter)

    def _expression_end(self) -> int:
        """Where a field's expression ends: `}`, `!`, `:` or a lone `=` outside any brackets."""
        r, source = self.r, self.r.source
        open_: list[str] = []
        while True:
            at = r.at
            if at >= len(source):
                raise SyntaxError("f-string: expecting '}'")
            char = source[at]
            if r._string_starts():
                try:
                    r._literal()  # a nested string, of any quotes (f-strings too)
                except SyntaxError as exc:  # most likely this f-string's own closing quote, too soon
                    raise SyntaxError(
                        "f-string: expecting '}'" if "unterminated" in str(exc) else str(exc)
                    ) from None
                continue
            if char == "#":
                end = source.find("\n", at)
                r.at = len(source) if end < 0 else end
                continue
            if not open_ and (char in "}:" or (char == "!" and source[at + 1 : at + 2] != "=")):
                return at
            if not open_ and char == "=" and source[at + 1 : at + 2] != "=" and source[at - 1] not in "=!<>":
                return at
            if char in _CLOSING:
                open_.append(_CLOSING[char])
            elif char in ")]}":
                if not open_ or open_.pop() != char:
                    raise SyntaxError(f"f-string: unmatched {char!r}")
            elif char in "=!" and source[at + 1 : at + 2] == "=":
                r.at += 1  # `==`, `!=`: an operator, not a field's end
            r.at = r._token_end(r.at) if char.isalnum() or char == "_" else r.at + 1


def _joined(literals: list[_Literal], depth: int) -> ast.JoinedStr:
    """The JoinedStr for a run of adjacent literals, at least one of them an f-string."""
    if any("b" in lit.prefix for lit in literals):
        raise SyntaxError("cannot mix bytes and nonbytes literals")
    parts: list[str | _Field] = []
    for lit in literals:
        parts.extend(lit.parts if "f" in lit.prefix else [ast.literal_eval(lit.text)])
    return ast.JoinedStr(values=_values(parts, depth))


def _values(parts: list[str | _Field], depth: int) -> list[ast.expr]:
    values: list[ast.expr] = []
    text = ""
    for part in parts:
        if isinstance(part, str):
            text += part
            continue
        text += part.debug
        if text:
            values.append(ast.Constant(text))
        text = ""
        spec = None if part.spec is None else ast.JoinedStr(values=_values(part.spec, depth))
        expression = _parse("(" + part.source + "\n)", depth + 1)
        values.append(ast.FormattedValue(value=expression, conversion=part.conversion, format_spec=spec))
    if text:
        values.append(ast.Constant(text))
    return values
