"""Julep v1's expression library in Mint's sandbox: every function and module member Julep's
evaluator offered (agents_api/common/utils/evaluator.py at v1) behaves as it did there, charged by its work;
the few Mint cannot offer safely are refused when the task is created, by name and with the reason."""

import pytest

from expressions.parsing import ExpressionError, check_expression
from expressions.text_helpers import sentences
from workflows.values import ValueEvaluator

EMAIL = 'Sure!\n```json\n{"subject": "Re: agents", "body": "Use agents.create."}\n```\nAnything else?'
NAMES = {"_": {"reply": EMAIL, "people": "name,age\r\nAda,36\r\nAlan,41\r\n"}}


def value(source: str) -> object:
    assert check_expression(source) == [], check_expression(source)
    return ValueEvaluator("dollar").value("$ " + source, NAMES)


@pytest.mark.parametrize(
    "source, expected",
    [
        # extract_json: the first ```json block, else the first ``` block, else all the text (strict=False)
        ("extract_json(_.reply)['subject']", "Re: agents"),
        ('extract_json(\'Here is some JSON: ```json\\n{"key": "value"}\\n```\')', {"key": "value"}),
        ("extract_json('```\\n[1, 2]\\n```')", [1, 2]),
        ('extract_json(\'{"a": "tab\\there"}\')', {"a": "tab\there"}),
        # csv over strings (python-expression.mdx's example, and the rest of Julep's stdlib_csv)
        ('[row for row in csv.reader("a,b,c\\n1,2,3")]', [["a", "b", "c"], ["1", "2", "3"]]),
        ("list(csv.reader('a;\"b;c\"', delimiter=';'))", [["a", "b;c"]]),
        ("csv.reader('a\\tb', dialect=csv.excel_tab)", [["a", "b"]]),
        ("[r['name'] + '=' + r['age'] for r in csv.DictReader(_.people)]", ["Ada=36", "Alan=41"]),
        (
            "csv.DictReader('1,2,3', fieldnames=['a', 'b'], restkey='rest')",
            [{"a": "1", "b": "2", "rest": ["3"]}],
        ),
        (
            "[[w.writerow(['a', 'b,c']), w.writerows([[1, None]]), w.getvalue()] for w in [csv.writer('')]][0]",
            [9, None, 'a,"b,c"\r\n1,\r\n'],
        ),
        (
            "[[w.writeheader(), w.writerow({'b': 2}), w.getvalue()] for w in [csv.DictWriter('', ['a', 'b'])]][0]",
            [5, 4, "a,b\r\n,2\r\n"],
        ),
        ("[csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC, csv.QUOTE_NONE]", [0, 1, 2, 3]),
        (
            "[csv.list_dialects(), csv.get_dialect(csv.unix_dialect).lineterminator]",
            [["excel", "excel-tab", "unix"], "\n"],
        ),
        ("csv.field_size_limit()", 131072),
        # the rest of ALLOWED_FUNCTIONS
        ("[reduce(max, [3, 9, 2]), reduce(pow, [2, 3], 1)]", [9, 1]),
        ("[match_regex('[0-9]+', '123'), match_regex('[0-9]+', '123 go')]", [True, False]),
        (
            "[dump_json({'a': 'é'}), json.dumps([1, 2], separators=(',', ':'), ensure_ascii=False)]",
            ['{"a": "\\u00e9"}', "[1,2]"],
        ),
        ("dump_yaml({'b': 1, 'a': [2]})", "a:\n- 2\nb: 1\n"),
        # module members Julep listed
        ("[re.finditer('a(b)', 'abab')[1].group(1), re.subn('a', 'x', 'banana')]", ["b", ["bxnxnx", 3]]),
        ("[string.octdigits, len(string.printable)]", ["01234567", 100]),
        (
            "[math.pow(2, 3), math.isinf(math.inf), math.asin(1) == math.pi / 2, math.acos(1), math.atan(0)]",
            [8.0, True, True, 0.0, 0.0],
        ),
        (
            "[statistics.geometric_mean([1, 4]), statistics.median_low([1, 2, 3, 4]), "
            "statistics.median_high([1, 2, 3, 4]), statistics.quantiles([1, 2, 3, 4, 5], n=4)]",
            [2.0, 2, 3, [1.5, 3.0, 4.5]],
        ),
        (
            "[urllib.parse.parse_qsl('a=1&b=2'), urllib.parse.urlsplit('https://x.org/p?q=1').netloc]",
            [[["a", "1"], ["b", "2"]], "x.org"],
        ),
        (
            "[datetime.datetime.datetime(2024, 5, 6, 7).isoformat(), datetime.datetime.date(2024, 5, 6), "
            "datetime.datetime.time(12, 30), datetime.datetime.timedelta(hours=1), datetime.datetime.datetime(2024, 5, 6, tzinfo=datetime.timezone.utc.utc).isoformat()]",
            ["2024-05-06T07:00:00", "2024-05-06", "12:30:00", 3600.0, "2024-05-06T00:00:00+00:00"],
        ),
        (
            "[time.time() > 0, time.strftime('%Y-%m-%d', (2024, 5, 6, 0, 0, 0, 0, 127, 0))]",
            [True, "2024-05-06"],
        ),
        (
            "[random.choice([7]), len(random.sample([1, 2, 3], 2)), random.randint(1, 1), random.random() < 1]",
            [7, 2, 1, True],
        ),
        ("base64.b64decode(base64.b64encode('hé'))", "hé"),
    ],
)
def test_julep_functions_and_modules_behave_as_in_julep(source, expected):
    assert value(source) == expected


def test_chunk_doc_groups_sentences_15_to_a_chunk_sharing_3():
    text = " ".join(f"Sentence number {i} ends here." for i in range(30))
    chunks = value(f"chunk_doc({text!r})")
    assert [c.count("ends here.") for c in chunks] == [15, 15, 6]
    assert chunks[1].startswith("Sentence number 12 ") and chunks[2].startswith("Sentence number 24 ")
    assert value("chunk_doc('  One line.  ')") == ["One line."] and value("chunk_doc('')") == []


def test_sentences_end_at_punctuation_and_blank_lines():
    text = 'He said "stop!" Then left.\n\nA heading\nNext line... And (a note.) End'
    assert sentences(text) == [
        'He said "stop!"',
        "Then left.",
        "A heading\nNext line...",
        "And (a note.)",
        "End",
    ]


@pytest.mark.parametrize(
    "source, name",
    [
        ("nlp(_.reply)", "nlp"),
        ("humanize_text_alpha(_.reply, threshold=30)", "humanize_text_alpha"),
        ("markdown_to_html(_.reply)", "markdown_to_html"),
        ("html_to_markdown(_.reply)", "html_to_markdown"),
        ("csv.register_dialect('x', delimiter=';')", "csv.register_dialect"),
        ("csv.Sniffer().sniff(_.people)", "csv.Sniffer"),
        ("time.strptime('2024', '%Y')", "time.strptime"),
        ("datetime.datetime.strptime('2024', '%Y')", "datetime.datetime.strptime"),
    ],
)
def test_julep_names_mint_cannot_offer_are_refused_at_creation_by_name(source, name):
    (problem,) = check_expression(source)
    assert problem.startswith(f"{name} (from Julep v1) is not available in Mint: "), problem


def test_a_missing_module_member_is_refused_at_creation():
    assert check_expression("math.tau2 + 1") == ["math.tau2 is not available"]
    assert check_expression("[math.x for math in _]") == []  # a comprehension's own name


@pytest.mark.parametrize(
    "source, message",
    [
        ("extract_json('```json\\n{}')", "Code block has invalid or missing markers"),
        ("extract_json('nope')", "Failed to parse JSON: Expecting value"),
        ("csv.reader('a', dialect='tsv')", "unknown csv dialect 'tsv'"),
        ("csv.field_size_limit(10)", "cannot be changed"),
        ("[w.writerow({'c': 1}) for w in [csv.DictWriter('', ['a'])]]", "fields not in fieldnames"),
        ("csv.writer('')", "not data"),
    ],
)
def test_julep_errors_read_as_julep_s(source, message):
    with pytest.raises(ExpressionError, match=message):
        value(source)
