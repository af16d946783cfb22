"""Python 3.12's f-strings (PEP 701) in expressions, whatever Python runs Mint.

Julep evaluated expressions on Python 3.12; its tasks reuse an f-string's quotes inside a replacement field and
put backslashes there. Each form is evaluated in the sandbox; the forms older Pythons parse too must come out
as the very nodes Python's own parser builds.
"""

import ast

import pytest

from expressions import fstrings
from expressions.parsing import ExpressionError, check_expression
from workflows.values import ValueEvaluator

NAMES = {
    "_": {"comment_id": 7, "xs": ["a", "b"], "name": "Ada", "price": 3.14159, "n": 42},
    "w": 6,
}


@pytest.mark.parametrize(
    "source, expected",
    [
        # the same quotes inside a field (the HN tutorial's url)
        ('f"https://hn/item/{_["comment_id"]}.json"', "https://hn/item/7.json"),
        ("f'{_['name']}' + f'{_[\"name\"]!r}'", "Ada'Ada'"),
        # backslashes and newlines inside a field (the email assistant's prompt)
        ("f\"{'\\n'.join(_.xs)}\"", "a\nb"),
        ("f'''- { '\\n- '.join([x.upper() for x in _.xs]) }'''", "- A\n- B"),
        ('f"{\n_.name\n}!"', "Ada!"),
        ('f"{_.name # a comment, with a } in it\n}"', "Ada"),
        ("f\"{'\\N{BULLET}'} {_.name}\"", "\u2022 Ada"),
        # nested f-strings, of the same quotes too
        ('f"{f"{_["xs"][0]}-{f"{_.n}"}"}"', "a-42"),
        # escaped braces, conversions, format specs with their own fields, debugging
        ('f"{{literal}} {_.n} }}"', "{literal} 42 }"),
        ('f"{_.name!r:>{w + 2}}|{_.price:.{2}f}|{_.n:{"0"}{5}}"', "   'Ada'|3.14|00042"),
        ('f"{_.n=}, {_.name = !s}, {_.price=:.1f}"', "_.n=42, _.name = Ada, _.price=3.1"),
        # adjacent literals, raw and triple-quoted f-strings, methods on the result
        ("'a' f\"{_['n']}\" 'b' f'{_.name}'", "a42bAda"),
        ('rf"\\d+{_["n"]}\\n"', "\\d+42\\n"),
        ('f"""say "{_["name"]}" """.strip().upper()', 'SAY "ADA"'),
        ('[f"{x}{_["n"]}" for x in _.xs]', ["a42", "b42"]),
    ],
)
def test_python_3_12_f_strings_evaluate(source, expected):
    assert check_expression(source, frozenset({"w"})) == []
    assert ValueEvaluator("dollar").value("$ " + source, NAMES) == expected


@pytest.mark.parametrize(
    "source",
    [
        'f"{x!r}"',
        'f"{x!s:>10}"',
        'f"{x:{w}.{p}f}"',
        'f"{x = }"',
        'f"{x=!s}"',
        'f"{{a}} {x} }}"',
        '"a" f"{x}" \'b\'',
        'f"a\\nb{x}\\tc"',
        'rf"\\d{x}\\n"',
        'f"\\N{BULLET} {x}"',
        'f"""a"{x}"b"""',
        "f'''{x\n}'''",
        'f"{x:}"',
        'f\'{ {"a": 1}["a"] }\'',
        "f'{f\"{x}\"}'",
    ],
)
def test_forms_every_python_reads_come_out_as_its_own_parser_builds_them(source):
    assert ast.dump(fstrings._parse(source, 0)) == ast.dump(ast.parse(source, mode="eval").body)


@pytest.mark.parametrize(
    "source, message",
    [
        ('f"{}"', "valid expression required before '}'"),
        ('f"{_.n!x}"', "invalid conversion character 'x'"),
        ('f"{_.n!}"', "missing conversion character"),
        ('f"{_["n"]"', "expecting '}'"),
        ('f"{_["n"]}}" + f"}"', "single '}' is not allowed"),
        ('f"{_["n"]) }"', "unmatched ')'"),
        ('f"{_["n"]}" + f"abc', "unterminated f-string literal"),
        ('b"a" f"{_["n"]}"', "cannot mix bytes and nonbytes literals"),
        ('f"{_["n"]}" +', "invalid syntax"),
        ("f'{" * 25 + "_" + "}'" * 25, "f-strings nest more than 20 levels deep"),
    ],
)
def test_bad_f_strings_are_refused_with_a_clear_message(source, message):
    (problem,) = check_expression(source)
    assert message in problem, problem


@pytest.mark.parametrize(
    "source, message",
    [
        ('f"{_["name"].__class__}"', "attribute '__class__' is not allowed"),
        ('f"{__import__("os")}"', "unknown name '__import__'"),
        ('f"{_["name"]:>{10 ** 9}}"', "format width 1000000000 is over 1000"),
        ('f"{_["name"]:{"*"}<5}"', "`*` widths are not supported"),
        ('f"{"a" * 10 ** 7}"', "result longer than"),
        ('f"{[f"{x:>999}" for x in range(100000)]}"', "operations"),
    ],
)
def test_f_strings_reach_nothing_more_than_other_expressions(source, message):
    with pytest.raises(ExpressionError, match=message.replace("*", r"\*")):
        evaluator = ValueEvaluator("dollar")
        if check_expression(source):
            raise ExpressionError("; ".join(check_expression(source)))
        evaluator.value("$ " + source, NAMES)
