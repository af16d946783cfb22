"""The sandbox corpus: escapes and resource attacks on expressions and templates, each refused quickly.

Every case must be rejected with an ExpressionError (a clear message), never succeed, and never run long.
Add a case for every new finding.
"""

import time

import pytest

from workflows.expressions import ExpressionError
from workflows.values import ValueEvaluator

NAMES = {"_": {"a": 1, "items": list(range(10_000))}, "x": "hi"}

EXPRESSION_ATTACKS = [
    # escapes: dunders, frames, formats, modules, functions
    "().__class__.__bases__[0].__subclasses__()",
    "x.__class__",
    "_.__init__",
    "str.__dict__",
    "len.__self__",
    "json.__dict__",
    "json.loads.__globals__",
    "(lambda: 1)()",
    "[c for c in ().__class__.__mro__]",
    "'{0.__class__}'.format(1)",
    "'{x}'.format_map({'x': 1})",
    "x.format",
    "getattr(x, 'upper')",
    "__import__('os')",
    "open('/etc/passwd')",
    "eval('1')",
    "exec('1')",
    "compile('1', 'x', 'eval')",
    "globals()",
    "vars()",
    "type(x)",
    "re.compile('a')",
    "datetime.datetime.now.__self__",
    "json.decoder",
    "math.__loader__",
    "(i for i in range(3)).gi_frame",
    "choice.__self__",
    "str(choice)",
    "f'{choice}'",
    "f'{json}'",
    # resource attacks: numbers, strings, collections, nesting, time
    "9 ** 9 ** 9",
    "10 ** 10 ** 10",
    "pow(10, 10 ** 8)",
    "1 << 10 ** 9",
    "'a' * 10 ** 9",
    "[0] * 10 ** 9",
    "'%*s' % (10 ** 9, '')",
    "'%1000000000d' % 1",
    "f'{1:>100000000}'",
    "f'{1:.100000000f}'",
    "join('', ['a' * 100000] * 20000)",
    "', '.join(['a' * 100000] * 20000)",
    "('a' * 500000).replace('a', 'aaaa')",
    "re.sub('', 'x' * 100000, 'a' * 100000)",
    "list(range(10 ** 9))",
    "[x for x in range(100000) for y in range(100000)]",
    "[sum(range(100000)) for i in range(1000)]",
    "sorted(_['items'] * 50)",
    "load_yaml('[' + '1,' * 300000 + '1]')",
    "load_json('[' * 100000 + ']' * 100000)",
    "str([[0] * 100000] * 100000)",
    "dump_json([_['items']] * 1000)",
    "[" * 4000 + "]" * 4000,
]

TEMPLATE_ATTACKS = [
    "{{ ''.__class__.__mro__ }}",
    "{{ x.__class__ }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ lipsum.__globals__ }}",
    "{{ namespace }}",
    "{{ self._TemplateReference__context }}",
    "{{ json.loads.__globals__ }}",
    "{{ 9 ** (9 ** 8) }}",
    "{{ 'a' * 10 ** 8 }}",
    "{{ 'x' | center(10 ** 9) }}",
    "{{ '{:>900000000}'.format(1) }}",
    "{{ '%900000000s' | format('') }}",
    "{{ 'x' | indent(10 ** 9) }}",
    "{% for a in range(100000) %}{% for b in range(300) %}{% endfor %}{% endfor %}",
    "{% for a in _['items'] %}{% for b in _['items'] %}{% endfor %}{% endfor %}",
    "{% for a in range(100000) %}{{ 'x' * 100 }}{% endfor %}",
    "{% set ns = namespace(x='a') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}",
    "{{ x.ljust(10 ** 9) }}",
]


def _evaluator() -> ValueEvaluator:
    return ValueEvaluator("dollar")


@pytest.mark.parametrize("source", EXPRESSION_ATTACKS)
def test_expression_attacks_are_refused_quickly(source):
    evaluator = _evaluator()
    started = time.process_time()
    with pytest.raises(ExpressionError):
        evaluator.value("$ " + source, NAMES)
    assert time.process_time() - started < 1.0  # CPU seconds: a generous bound, far below the 2 s deadlock


@pytest.mark.parametrize("source", TEMPLATE_ATTACKS)
def test_template_attacks_are_refused_quickly(source):
    evaluator = _evaluator()
    started = time.process_time()
    with pytest.raises(ExpressionError):
        evaluator.template(source, NAMES)
    assert time.process_time() - started < 1.0


def test_the_corpus_is_large():
    assert len(EXPRESSION_ATTACKS) + len(TEMPLATE_ATTACKS) >= 60


@pytest.mark.parametrize(
    "source, expected",
    [
        ("[t for t in set(['red', 'green', 'blue', 'amber'])]", ["red", "green", "blue", "amber"]),
        ("{3, 1, 2} | {4}", [3, 1, 2, 4]),
        ("_.keys()", ["a", "items"]),
        ("f'{x!r}'", "'hi'"),
        ("'Total: 5000 items %s' % x", "Total: 5000 items hi"),
        ("re.search('(h)(i)', x).group(2)", "i"),
        ("match_regex('(a+)+$', 'a' * 40 + 'b')", None),
        ("json.dumps({'a': 1}, 100)", '{\n                "a": 1\n}'),
    ],
)
def test_safe_forms_still_work(source, expected):
    assert _evaluator().value("$ " + source, NAMES) == expected


def test_templates_can_use_module_shims_and_helpers():
    assert _evaluator().template("{{ json.dumps(_.a) }} {{ len(x) }}", NAMES) == "1 2"
