"""The sandbox corpus: escapes and resource attacks on expressions and templates, each refused quickly.

Every case must be rejected with an ExpressionError (a clear message), never succeed, and never run long.
Add a case for every new finding.
"""

import contextlib
import functools
import json
import random
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from expressions.budget import step_clock
from expressions.parsing import ExpressionError
from workflows.values import ValueEvaluator

ROOT = Path(__file__).parents[1]
NAMES = {
    "_": {"a": 1, "items": list(range(10_000))},
    "x": "hi",
    "ab": "".join(random.Random(12).choice("ab") for _ in range(300_000)),  # a text RE2's DFA cannot cache
}
# Each case must be refused within this much CPU time (this thread's, not wall time): the step's work budget
# bounds the worst case at a few tens of milliseconds on an idle machine (chunk_doc over 900,000 characters
# is the slowest, ~0.11 s on a loaded CI machine); the bound sits at half the CPU guard's 0.5 s, far below
# Temporal's 2 s deadlock detector. A case near it means a charge is too low.
CPU_SECONDS = 0.25
# ... and while it runs Python may allocate at most this much memory at once (tracemalloc's peak, see
# _peak_memory). The corpus's own inputs (a 1,000,000-character string, a 100,000-element list) take a few
# megabytes; the values the attacks aimed at take hundreds.
MEMORY_BYTES = 32 << 20

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
    # Julep's expression library: each function charged by what it reads and builds
    "[extract_json(t) for t in ['```json\\n[' + '1,' * 300000 + '1]\\n```'] for i in range(100)]",
    "[extract_json(t) for t in ['\"' + 'a' * 999000 + '\"'] for i in range(1000)]",
    "[chunk_doc(t) for t in ['a. ' * 300000] for i in range(100)]",
    "[chunk_doc(t) for t in ['.' * 999999] for i in range(100)]",
    "csv.reader(',' * 999999 + '\\n')",
    "[csv.reader(t) for t in [',' * 300000] for i in range(100)]",
    "[csv.DictReader(t) for t in ['a,b\\n' + '1,2\\n' * 100000] for i in range(10)]",
    "[w.writerow(['a' * 100000] * 10) for w in [csv.writer('')] for i in range(100)]",
    "[w.writerows([['\"' * 1000] * 1000] * 1000) for w in [csv.writer('')]]",
    "reduce(max, [list(range(100000))] * 1000)",
    "reduce(pow, [9] * 1000)",
    "statistics.quantiles(list(range(100000)), n=9999)",
    "[time.strftime('%c' * 499) for i in range(100000)]",
    "[re.subn('', 'x', 'a' * 500000) for i in range(10)]",
    # Python 3.12 f-strings, read by Mint's own f-string parser on older Pythons
    'f"{_["a"].__class__}"',
    'f"{f"{x.__class__}"}"',
    "f\"{'{0.__class__}'.format(1)}\"",
    'f"{[f"{i:>999}" for i in range(100000)]}"',
    'f"{x:{"<"}{10 ** 9}}"',
    'f"{ab!r}{ab!r}{ab!r}{ab!r}"',
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
    # resource attacks found since: hidden costs (big integers, scans, copies, conversions, Python-speed
    # helpers) that a per-node count missed, and values built before their size was checked
    "round(5, -10 ** 9)",
    "(10 ** 20000) * (10 ** 20000) * (10 ** 20000) * (10 ** 20000)",
    "b'%1000000000d' % 1",
    "('%999d' * 10000) % tuple(range(10000))",
    "'%(a)s' * 100000 % {'a': 'x' * 1000}",
    "('%s' * 10000) % tuple([_['items']] * 10000)",
    "re.sub('(a+)', '\\\\1' * 1000, 'a' * 100000)",
    "sum([[0] * 1000] * 1000, [])",
    "urllib.parse.quote('/' * 1000000)",
    "base64.b64encode('x' * 1000000)",
    "json.dumps([load_json('[' * 60 + '1' + ']' * 60)] * 10000, indent=16)",
    "[s.upper() for s in ['a' * 1000000] for i in range(10000)]",
    "[s.split() for s in ['a ' * 500000] for i in range(100)]",
    "[f'{s}' for s in ['a' * 1000000] for i in range(10000)]",
    "[s[0:1000000] for s in ['a' * 1000000] for i in range(5000)]",
    "[('q' in s) for s in ['a' * 1000000] for i in range(10000)]",
    "[l == l for l in [list(range(100000))] for i in range(9999)]",
    "[x in l for l in [list(range(100000))] for x in range(9999)]",
    # membership and comparisons are charged by what they walk, still bounded
    "[[x] in l for l in [[[i] for i in range(9000)]] for x in range(9999)]",
    "[s in l for l in [['a' * 100000] * 9000] for s in ['a' * 100000] * 9999]",
    "[l < m for l in [[[i] for i in range(9000)]] for m in [[[i] for i in range(9000)]] for x in range(999)]",
    "[d == e for d in [{i: [i] for i in range(9000)}] for e in [{i: [i] for i in range(9000)}] for x in range(999)]",
    "[{'k': l} for l in [[[i] for i in range(9000)]] for x in range(999)]",
    "[(x, l) in {(1, 2): 3} for l in [list(range(9000))] for x in range(9999)]",
    "[l.count(5) for l in [list(range(100000))] for i in range(9999)]",
    "[l[::-1] for l in [list(range(100000))] for i in range(9999)]",
    "[[*l, *l] for l in [list(range(10000))] for i in range(9999)]",
    "[_['items'] + _['items'] for i in range(9999)]",
    "[d.items() for d in [dict(zip(range(100000), range(100000)))] for i in range(1000)]",
    "[{**d} for d in [dict(zip(range(100000), range(100000)))] for i in range(1000)]",
    "[str(l) for l in [list(range(100000))] for i in range(1000)]",
    "[sorted(l) for l in [list(map(str, range(10000)))] for i in range(1000)]",
    "[statistics.mean(l) for l in [list(range(10000))] for i in range(1000)]",
    "[dump_yaml(l) for l in [list(range(10000))] for i in range(100)]",
    "[load_yaml(t) for t in ['[' + '1,' * 100000 + '1]'] for i in range(100)]",
    "[re.findall('', s) for s in ['a' * 1000000] for i in range(100)]",
    "[(" + ", ".join(["re.search('a', 'b')"] * 30) + ") for i in range(10000)]",
    "[(" + ", ".join(["datetime.now()"] * 10) + ") for i in range(10000)]",
    "[" + " + ".join(["i"] * 200) + " for i in range(10000)]",
    "[[j for j in []] for i in range(10000)]",
    # big integers: arithmetic and decimal conversion cost with their size
    "[10 ** 20000 for i in range(10000)]",
    "[n * n for n in [10 ** 15000] for i in range(10000)]",
    "[n // 7 for n in [10 ** 20000] for i in range(10000)]",
    "[divmod(n, 7) for n in [10 ** 20000] for i in range(10000)]",
    "[str(n) for n in [10 ** 4000] for i in range(10000)]",
    "[int('1' * 4300) for i in range(10000)]",
    "[math.gcd(n, n - 1) for n in [10 ** 20000] for i in range(10000)]",
    "[statistics.variance([n, n - 1, n - 2]) for n in [0x" + "f" * 3000 + "] for i in range(10000)]",
    "[sum(l) for l in [[0x" + "f" * 3000 + "] * 1000] for i in range(10000)]",
    "[load_json(s) for s in ['[' + ('9' * 4300 + ',') * 200 + '1]'] for i in range(10)]",
    # a method looked up once and called many times (map, sorted/min/max keys, filter)
    "len(map(list(range(100000)).count, range(6000)))",
    "len(map(_['items'].index, [9999] * 9000))",
    "sorted(range(6000), key=list(range(100000)).count)",
    "max(range(6000), key=list(range(100000)).count)",
    "min(range(6000), key=list(range(100000)).count)",
    "len(filter(list(range(100000)).count, range(6000)))",
    "len(map(('a' * 1000000).count, ['a'] * 6000))",
    "len(map(('a' * 1000000).find, ['b'] * 6000))",
    "len(map(('ab ' * 300000).split, [None] * 1000))",
    "len(map(x.replace, ['h'] * 10000, ['h' * 1000] * 10000))",
    "len(map(' '.join, [['a' * 10000] * 100] * 1000))",
    "len(map(('ab' * 500000).startswith, ['ab' * 500000] * 5000))",
    "len(map(datetime.now().strftime, ['%c' * 500] * 10000))",
    "len(map(_.get, [tuple(range(100000))] * 1000))",
    "len(map(re.search('(a+)', 'a' * 1000000).group, [1] * 1000))",
    "len(map(re.search('(a+)', 'a' * 1000000).groups, [None] * 1000))",
    "len(map(isinstance, [1] * 3000, [tuple(range(100000))] * 3000))",
    "sorted([l for l in [list(range(100000))] for i in range(300)])",
    "max([l for l in [list(range(100000))] for i in range(300)])",
    "sorted(range(300), key=dict(zip(range(300), [list(range(100000))] * 300)).get)",
    "[l.index(l[-1]) for l in [[list(range(1000))] * 1000] for i in range(100)]",
    # strftime and strptime, random.sample with counts
    "datetime.now().strftime('%c' * 100000)",
    "[datetime.now().strftime('%c' * 499) for i in range(100000)]",
    "datetime.datetime.strptime('1', '%d')",
    "datetime.fromisoformat('2024-01-01' + ' ' * 1000000)",
    "random.sample(range(10), 10 ** 6, counts=[10 ** 6] * 10)",
    "random.sample(range(10), 5, counts=[1] * 10 ** 6)",
    "len(random.sample(range(100000), 100000))",
    "len(sample(range(100000), 100000))",
    "len(shuffle(list(range(100000))))",
    "random.choices(range(10), k=10 ** 8)",
    "[random.randint(0, 2 ** 90000) for i in range(10000)]",
    # bytes, to_bytes, from_bytes: unreachable methods
    "(1).to_bytes(10 ** 8, 'big')",
    "int.from_bytes(b'a' * 10, 'big')",
    "(255).bit_length()",
    "b'a'.ljust(10 ** 8)",
    "b'a'.center(10 ** 8)",
    "b'0'.zfill(10 ** 8)",
    "(b'\\t' * 1000).expandtabs(100000)",
    "b'a'.hex()",
    "x.encode()",
    # match objects: the raw RE2 program behind them is unreachable, and what they copy is charged
    "re.search('a', 'a').re",
    "re.search('a', 'a').re.sub('', 'x' * 1000, 'a' * 100000)",
    "re.match('a', 'a').re.split('', 'a' * 1000000)",
    "re.search('(a)', 'a').expand('\\\\1' * 1000000)",
    "re.search('a', 'a').string",
    "re.finditer('a', 'a' * 1000000)",  # a list (Julep's re.finditer), each match charged as it comes
    "[re.subn('a', 'bb', x) for x in ['a' * 100000] for i in range(100)]",
    "[m[0] for m in [re.search('a+', 'a' * 1000000)] for i in range(300)]",
    "[m.group() for m in [re.search('a+', 'a' * 1000000)] for i in range(300)]",
    "[str(m) for m in [re.search('a+', 'a')]]",
    # regexes: big Unicode programs, patterns that defeat RE2's DFA, a match at every character
    "re.search('\\\\p{L}{1000}', 'a')",
    "re.search('(?i)[\\\\p{L}]{400}', 'a')",
    "re.search('\\\\p{L}{300}x', 'é' * 100000)",
    "[re.search('\\\\p{L}{16}x' + str(i), 'é') for i in range(100)]",
    "re.findall('.{1000}x', 'é' * 100000)",
    "re.search('[ab]*a[ab]{30}c', ab)",
    "re.search('.*a.{100}c', ab)",
    "re.findall('', 'a' * 400000)",
    "re.sub('', '', 'a' * 400000)",
    "re.split('', 'a' * 400000)",
    "[re.findall('a', 'a' * 10000) for i in range(100)]",
    "re.sub('(a)', '\\\\1' * 600, 'a' * 2000)",
    "re.escape('\\x00' * 600000)",
    # str methods that grow their string, or scan it once per character of an argument
    "x.expandtabs(10 ** 8)",
    "x.center(10 ** 8)",
    "x.ljust(10 ** 8)",
    "x.zfill(10 ** 8)",
    "x.translate({104: 'y' * 10 ** 6})",
    "x.swapcase()",
    "('ΐ' * 400000).upper()",
    "('ß' * 500000).upper()",
    "('ΐ' * 400000).casefold()",
    "('a' * 100000).strip('b' * 100000 + 'a')",
    "[s.upper() for s in ['é' * 1000000] for i in range(1000)]",
    "('a,' * 500000).split(',')",
    "list('中' * 1000000)",
    # format specs
    "f'{x:{10 ** 6}}'",
    "f'{1:,.1000000f}'",
    "'{:>1000000}'.format(1)",
    "format(1, '>1000000')",
    "'%.1000000f' % 1.0",
    # hashing: tuples hash by walking them, and numbers past 2**61 can be made to collide
    "len(set([t for t in [tuple(range(100000))] for i in range(300)]))",
    "[t in {1: 2} for t in [tuple(range(100000))] for i in range(300)]",
    "len({t: 1 for t in [tuple(range(100000))] for i in range(300)})",
    "[d.get(t) for d in [{1: 2}] for t in [tuple(range(100000))] for i in range(300)]",
    "statistics.mode([t for t in [tuple(range(100000))] for i in range(300)])",
    "len(set(list(range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1))))",
    "len({i * (2 ** 61 - 1): 1 for i in range(20000)})",
    "len(dict(zip(list(range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1)), range(20000))))",
    "statistics.mode(list(range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1)))",
    "{1} | list(range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1))",
    "len(set([(n,) for n in range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1)]))",
    "[{**d} for d in [load_yaml('{' + ', '.join(map(str, range(0, 500 * (2 ** 61 - 1), 2 ** 61 - 1))) + '}')]"
    " for i in range(3000)]",
    # module members that grow their input
    "urllib.parse.quote('é' * 400000)",
    "urllib.parse.urlencode({'a': [_['items']] * 100})",
    "urllib.parse.urlencode([('a', 'é' * 300000)])",
    "urllib.parse.quote('a', 'x' * 1000000)",
    "base64.b64encode('é' * 400000)",
    "string.capwords('ΐ ' * 400000)",
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
    # found since (see EXPRESSION_ATTACKS)
    "{{ len }}",
    "{{ json }}",
    "{{ round(5, -10 ** 9) }}",
    "{{ 5 | round(-10 ** 9) }}",
    "{{ ('a' * 100000) | replace('', 'y' * 1000) | length }}",
    "{{ ('a' * 100000).replace('', 'y' * 1000) | length }}",
    "{{ ('y' * 1000).join(['a'] * 100000) | length }}",
    "{{ ('a' * 1000000).translate({97: 'y' * 1000}) | length }}",
    "{{ ('a' * 100000)['replace']('', 'y' * 1000) | length }}",
    "{{ ('y' * 1000)['join'](['a'] * 100000) | length }}",
    "{% for f in ['a' * 100000] | map(attribute='replace') %}{{ f('', 'y' * 1000) | length }}{% endfor %}",
    "{{ (('a' * 100000) | attr('replace'))('', 'y' * 1000) | length }}",
    "{% set a = 'x' * 1000000 %}{% set b = a ~ a ~ a ~ a ~ a ~ a ~ a ~ a ~ a ~ a %}{{ b | length }}",
    "{{ [1] | batch(10 ** 8, 0) | list | length }}",
    "{{ [1] | slice(10 ** 8) | list | length }}",
    "{{ [_['items']] * 100000 }}",
    "{{ ([_['items']] * 1000) | join(',') | length }}",
    "{{ ([_['items']] * 100) | pprint | length }}",
    "{% for i in range(2) recursive %}{% if loop.depth < 22 %}{{ loop(range(2)) }}{% endif %}{% endfor %}",
    "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(22) }}",
    "{% for i in range(100) %}{% set y = ('a ' * 100000) | wordwrap(1) %}{% endfor %}",
    "{% for s in ['a' * 1000000] %}{% for i in range(10000) %}{% set y = s.upper() %}{% endfor %}{% endfor %}",
    "{% for s in ['a' * 1000000] %}{% for i in range(10000) %}{% set y = 'q' in s %}{% endfor %}{% endfor %}",
    "{% for s in ['a' * 1000000] %}{% for i in range(10000) %}{% set y = s[1:] %}{% endfor %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] == _['items'] %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] + _['items'] %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | tojson %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | string %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | sort %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | unique | list %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | sum %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | join(',') %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | map('string') | list %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = _['items'] | select('odd') | list %}{% endfor %}",
    "{% for i in range(100000) %}{% set y = i | string | upper | lower | trim | title | capitalize | string"
    " | upper | lower | trim | title | capitalize %}{% endfor %}",
    # every attribute a template reads goes through the expressions' allow-list
    "{{ (1).to_bytes(10 ** 8, 'big') | length }}",
    "{{ 'a'.encode().ljust(10 ** 8) | length }}",
    "{{ 'a'.encode().center(10 ** 8) | length }}",
    "{{ 'a'.encode().zfill(10 ** 8) | length }}",
    "{{ ('\t' * 1000).encode().expandtabs(10 ** 5) | length }}",
    "{{ re.search('a', 'a').re.sub('', 'x' * 1000, 'a' * 100000) | length }}",
    "{{ re.search('a', 'a').re.split('', 'a' * 1000000) | length }}",
    "{{ re.search('a', 'a')['re'] }}",
    "{{ (re.search('a', 'a') | attr('re')).split('', 'a' * 1000000) | length }}",
    "{{ datetime.now().strftime('%c' * 100000) | length }}",
    "{{ datetime.now().replace(year=1) }}",
    "{{ x.swapcase() }}",
    "{{ x.zfill(10 ** 8) | length }}",
    "{{ [1, 2, 3] | map(attribute='bit_length') | list }}",
    "{{ _['items'] | attr('count') }}",
    "{{ list(range(6000)) | map(list(range(100000)).count) | list | length }}",
    "{% for i in range(6000) %}{% set y = list(range(100000)).count(i) %}{% endfor %}",
    "{% set f = list(range(100000)).count %}{% for i in range(6000) %}{% set y = f(i) %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = datetime.now().strftime('%c' * 999) %}{% endfor %}",
    "{% for m in [re.search('a+', 'a' * 1000000)] %}{% for i in range(300) %}{% set y = m[0] %}{% endfor %}"
    "{% endfor %}",
    # filters that grow their input, or read a collection as text
    "{{ ('ΐ' * 400000) | upper | length }}",
    "{{ ('ß' * 400000) | title | length }}",
    "{{ ('\"' * 500000) | e | length }}",
    "{{ ('<' * 500000) | forceescape | length }}",
    "{{ ('é' * 300000) | urlencode | length }}",
    "{{ {'a': 'é' * 300000} | urlencode | length }}",
    "{{ ('a ' * 300000) | wordwrap(1, wrapstring='x' * 100) | length }}",
    "{{ ('a.co ' * 100000) | urlize | length }}",
    "{{ {'a': '\"' * 900000} | xmlattr | length }}",
    "{{ ([[0] * 1000] * 1000) | sum(start=[]) | length }}",
    "{% for i in range(1000) %}{% set y = _['items'] | upper %}{% endfor %}",
    "{% for i in range(1000) %}{% set y = _['items'] | e %}{% endfor %}",
    "{% for i in range(1000) %}{% set y = _['items'] | safe %}{% endfor %}",
    "{% for i in range(1000) %}{% set y = _['items'] is lower %}{% endfor %}",
    "{% for i in range(1000) %}{% set y = _['items'] | replace('1', '2') %}{% endfor %}",
    "{% for i in range(1000) %}{% set y = _['items'] | center(10) %}{% endfor %}",
    "{{ ('a' * 100000) | trim('b' * 100000 + 'a') }}",
    "{{ ('中' * 1000000) | list | length }}",
    "{% for i in range(3000) %}{% set y = ('9' * 4300) | int %}{% endfor %}",
    # filters and tests that compare or hash nested values, and operators on big numbers
    "{{ ([_['items']] * 300) | sort | length }}",
    "{{ ([_['items']] * 300) | max | length }}",
    "{{ ([_['items']] * 300) | unique | list | length }}",
    "{{ ([_['items']] * 300) | groupby(0) | length }}",
    "{{ ([_['items']] * 300) | map('list') | sort | length }}",
    "{{ list(range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1)) | unique | list | length }}",
    "{{ dict(zip(list(range(0, 20000 * (2 ** 61 - 1), 2 ** 61 - 1)), range(20000))) | length }}",
    "{% set k = 2 ** 61 - 1 %}{{ {" + ", ".join(f"k * {i}: 1" for i in range(300)) + "} | length }}",
    "{% for n in [10 ** 30000] %}{% for i in range(10000) %}{% set y = n // (10 ** 15000) %}{% endfor %}"
    "{% endfor %}",
    "{% for n in [10 ** 30000] %}{% for i in range(10000) %}{% set y = n - 1 %}{% endfor %}{% endfor %}",
    "{% for i in range(10000) %}{% set y = (10 ** 30000) is divisibleby(10 ** 15000 + 1) %}{% endfor %}",
    # module members and regexes, as in expressions
    "{{ random.sample(range(10), 10 ** 6, counts=[10 ** 6] * 10) | length }}",
    "{{ re.findall('', 'a' * 400000) | length }}",
    "{{ re.search('\\p{L}{300}x', 'é' * 100000) }}",
    "{{ urllib.parse.quote('é' * 400000) | length }}",
]


def _evaluator() -> ValueEvaluator:
    return ValueEvaluator("dollar")


@contextlib.contextmanager
def _cpu_time() -> Iterator[list[float]]:
    """The CPU time of the block, in seconds (appended to the list it yields once the block ends).

    This thread's, less garbage collections (the CPU guard's own clock): the process's CPU would count the
    suite's other threads (Temporal's core, servers of other fixtures), and a collection falling due here
    would scan the whole session's heap."""
    spent: list[float] = []
    started = step_clock()
    try:
        yield spent
    finally:
        spent.append(step_clock() - started)


def _peak_memory(attack: Callable[[], object]) -> int:
    """The most memory Python held at once while `attack` ran, beyond what it held before, in bytes.

    tracemalloc sees every allocation Python's allocators make (objects, string and list buffers) and
    measures each case on its own; the process's maximum resident size only ever rises, so once one case
    has pushed it up it says nothing about the next. RE2's C++ allocations are invisible to tracemalloc:
    those are bounded by regex.MAX_MEM per program instead. Run apart from the CPU measurement, which
    tracing would slow down, and in a process of its own (peaks_of)."""
    tracemalloc.start()
    try:
        with contextlib.suppress(ExpressionError):
            attack()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def peaks_of(kind: str) -> list[int]:
    """The peak memory of each attack of `kind` ("expression" or "template"), in corpus order."""
    if kind == "expression":
        return [_peak_memory(lambda s=s: _evaluator().value("$ " + s, NAMES)) for s in EXPRESSION_ATTACKS]
    return [_peak_memory(lambda s=s: _evaluator().template(s, NAMES)) for s in TEMPLATE_ATTACKS]


@functools.cache
def _peaks(kind: str) -> list[int]:
    """peaks_of(kind), measured in a fresh process: starting and stopping tracemalloc while the suite's other
    threads run (Temporal's core calls into Python from threads of its own) crashed CPython 3.11 once, a
    segmentation fault in the middle of this module."""
    script = f"import json, tests.test_sandbox as t; print(json.dumps(t.peaks_of({kind!r})))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("source", EXPRESSION_ATTACKS)
def test_expression_attacks_are_refused_quickly(source):
    evaluator = _evaluator()
    with _cpu_time() as spent, pytest.raises(ExpressionError):
        evaluator.value("$ " + source, NAMES)
    assert spent[0] < CPU_SECONDS
    assert _peaks("expression")[EXPRESSION_ATTACKS.index(source)] < MEMORY_BYTES


@pytest.mark.parametrize("source", TEMPLATE_ATTACKS)
def test_template_attacks_are_refused_quickly(source):
    evaluator = _evaluator()
    with _cpu_time() as spent, pytest.raises(ExpressionError):
        evaluator.template(source, NAMES)
    assert spent[0] < CPU_SECONDS
    assert _peaks("template")[TEMPLATE_ATTACKS.index(source)] < MEMORY_BYTES


def test_the_corpus_is_large():
    assert len(EXPRESSION_ATTACKS) + len(TEMPLATE_ATTACKS) >= 300


@pytest.mark.parametrize(
    "source, expected",
    [
        ("[t for t in set(['red', 'green', 'blue', 'amber'])]", ["red", "green", "blue", "amber"]),
        ("{3, 1, 2} | {4}", [3, 1, 2, 4]),
        ("_.keys()", ["a", "items"]),
        ("f'{x!r}'", "'hi'"),
        ("'Total: 5000 items %s' % x", "Total: 5000 items hi"),
        ("re.search('(h)(i)', x).group(2)", "i"),
        (
            "[match_regex('(a+)+$', 'a' * 40 + 'b'), match_regex('a+', 'aa'), match_regex('a', 'ab')]",
            [False, True, False],
        ),
        ("json.dumps({'a': 1}, 100)", '{\n                "a": 1\n}'),
        ("round(3.14159, 2)", 3.14),
        ("sum([[1], [2]], [])", [1, 2]),
        ("re.sub('(a)', '\\\\1\\\\1', 'ab')", "aab"),
        ("'%5s|%-3d|%(a)s' % {'a': 1} if False else '%5s|%-3d' % ('a', 7)", "    a|7  "),
        ("[*[1, 2], *(3,)] + [{**{'a': 1}, 'b': 2}]", [1, 2, 3, {"a": 1, "b": 2}]),
        ("x[1:] + x.upper() + str([1, 2] == [1, 2]) + str('h' in x)", "iHITrueTrue"),
        ("_['items'][-3:]", [9997, 9998, 9999]),
        ("len([i * i for i in _['items'] if i % 2]) + sum(_['items'])", 5000 + 49995000),
        # methods passed as values, and the functions that take them
        ("sorted(['bb', 'a', 'ccc'], key=len, reverse=True)", ["ccc", "bb", "a"]),
        ("list(map('a,b;c'.split, [',', ';']))", [["a", "b;c"], ["a,b", "c"]]),
        ("max(['b', 'A', 'cc'], key=len) + min(3, 1, 2, key=abs) * 'x'", "ccx"),
        (
            "[max([], default=0), min([4, 2]), sorted(_['items'][:3], key=_['items'].index)]",
            [0, 2, [0, 1, 2]],
        ),
        ("list(filter(x.count, ['h', 'z', 'i'])) + sorted({'b': 1, 'a': 2}.keys())", ["h", "i", "a", "b"]),
        ("[{'a': 1}.get('a'), {'a': 1}.get('z', 0), {'a': 1}.items()]", [1, 0, [["a", 1]]]),
        (
            "[[m.group(1), m.groups(), m.span(), m[2], m.groupdict()] for m in [re.search('(a)(?P<n>b)', 'xab')]]",
            [["a", ["a", "b"], [1, 3], "b", {"n": "b"}]],
        ),
        (
            "[re.findall('(a)(b)', 'abab'), re.split('(,)', 'a,b'), re.sub('(a)', '<\\\\1>', 'bab')]",
            [[["a", "b"], ["a", "b"]], ["a", ",", "b"], "b<a>b"],
        ),
        (
            "[x.title(), 'é'.upper(), ' a '.strip(), 'a-b'.partition('-'), x.startswith(('z', 'h'))]",
            ["Hi", "É", "a", ["a", "-", "b"], True],
        ),
        (
            "[isinstance(x, str), isinstance(1.5, float), isinstance({1}, set), isinstance(x, (int, list))]",
            [True, True, True, False],
        ),
        (
            "[len(set('abca')), dict(zip('ab', [1, 2])), {(1, 2): 3}[(1, 2)], (1, 2) in {(1, 2): 3}]",
            [3, {"a": 1, "b": 2}, 3, True],
        ),
        ("datetime.fromisoformat('2024-05-06T07:08:09').strftime('%Y %B %d')", "2024 May 06"),
        (
            "[len(random.sample(range(10), 3)), len(sample(range(5), 5, counts=[2] * 5)), len(shuffle([1, 2]))]",
            [3, 5, 2],
        ),
        (
            "[urllib.parse.quote('a b/é'), urllib.parse.urlencode({'q': 'a b', 'n': 1}), base64.b64encode('hi')]",
            ["a%20b/%C3%A9", "q=a+b&n=1", "aGk="],
        ),
    ],
)
def test_safe_forms_still_work(source, expected):
    assert _evaluator().value("$ " + source, NAMES) == expected


def test_templates_can_use_module_shims_and_helpers():
    assert _evaluator().template("{{ json.dumps(_.a) }} {{ len(x) }}", NAMES) == "1 2"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("{{ ['a', 'b'] | join(', ') }} {{ x[1:] }} {{ 'a' ~ 1 ~ [2] }}", "a, b i a1[2]"),
        ("{% for i in range(3) %}{{ i }}{% endfor %} {{ 1 < 2 < 3 }} {{ 'x' in 'xyz' }}", "012 True True"),
        ("{{ [3, 1, 2] | sort | join(',') }} {{ {'b': 1, 'a': 2} | tojson }}", '1,2,3 {"a": 2, "b": 1}'),
        (
            "{% macro g(a) %}<{{ a }}>{% endmacro %}{{ g(1) }}{{ g('x') }} {{ 5 is divisibleby(5) }}",
            "<1><x> True",
        ),
        (
            "{{ x.upper() }} {{ x.replace('h', 'H') }} {{ x | replace('h', 'j') }} {{ 3.14159 | round(2) }}",
            "HI Hi ji 3.14",
        ),
        (
            "{{ [1, 2, 3] | map('string') | join('-') }} {{ [1, 2, 3] | select('odd') | list }}",
            "1-2-3 [1, 3]",
        ),
        (
            "{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %} {{ [1, 2] | batch(1) | list }}",
            "a=1 [[1], [2]]",
        ),
        (
            "{{ 'a b c' | wordwrap(3) }} {{ _['items'][:3] }} {{ '%s!' % x }} {{ None }}",
            "a b\nc [0, 1, 2] hi! ",
        ),
        # Jinja's loop and group objects, and filters that compare, hash, escape or encode
        (
            "{% for i in 'ab' %}{{ loop.index }}{{ loop.cycle('x', 'y') }}{{ loop.first }}{% endfor %}",
            "1xTrue2yFalse",
        ),
        (
            "{% for g in [{'k': 1}, {'k': 2}, {'k': 1}] | groupby('k') %}{{ g.grouper }}:{{ g.list | length }} "
            "{% endfor %}{{ [3, 1, 3] | unique | list }} {{ [{'a': 2}, {'a': 1}] | sort(attribute='a') | first }}",
            "1:2 2:1 [3, 1] {'a': 1}",
        ),
        (
            "{{ '<a>' | e }} {{ 'a b' | urlencode }} {{ 'hi there' | title }} {{ [[1], [2]] | sum(start=[]) }}",
            "&lt;a&gt; a%20b Hi There [1, 2]",
        ),
        (
            "{{ x | upper }} {{ x.split('h') }} {{ {'a': 1}.get('a') }} {{ re.search('(i)', x)[1] }} "
            "{{ [1, 2] | max }} {{ {'b': 1, 'a': 2} | dictsort | first }} {{ 7 - 2 }} {{ 7 // 2 }} {{ 7 / 2 }}",
            "HI ['', 'i'] 1 i 2 ('a', 2) 5 3 3.5",
        ),
    ],
)
def test_safe_template_forms_still_work(source, expected):
    assert _evaluator().template(source, NAMES) == expected


def test_a_budget_counts_the_same_work_the_same_way():
    """Work is counted in units, never in seconds: a replay charges exactly what the first run charged."""
    spent = []
    for _ in range(3):
        evaluator = _evaluator()
        evaluator.value("$ [str(i) + x for i in _['items'][:3000] if i % 3]", NAMES)
        evaluator.budget.start_step()
        evaluator.template("{% for i in _['items'][:500] %}{{ i | string | upper }}{% endfor %}", NAMES)
        spent.append(evaluator.budget.since_yield)
    assert len(set(spent)) == 1 and spent[0] > 0


def test_a_reference_to_data_is_not_copied_but_a_live_container_is():
    evaluator = _evaluator()
    assert evaluator.value("$ _['items']", NAMES) is NAMES["_"]["items"]
    state = {"a": [1]}
    copied = evaluator.value("$ state", {"state": state})
    assert copied == state and copied is not state


def test_templates_take_randomness_only_from_temporal():
    """Jinja's `random` filter uses Python's own generator, which a replay would not repeat."""
    evaluator = _evaluator()
    with pytest.raises(ExpressionError, match="random"):
        evaluator.template("{{ [1, 2, 3] | random }}", NAMES)
    assert evaluator.template("{{ random.choice([7]) }}", NAMES) == "7"
