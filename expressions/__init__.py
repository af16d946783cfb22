"""The expression sandbox: how a task's Python expressions and Jinja templates run on shared workers.

The contract. In: an expression (`evaluator.Evaluator.evaluate`) or a template (`templates.render_template`),
with its context, the names in scope (plain data: `_`, `inputs`, `steps`, `state`, ..., see
`parsing.CONTEXT_NAMES`), and from the caller the work Budget to charge, the random generator and the clock.
Out: the expression's value, plain data (null, booleans, numbers, text, lists and dicts, and the dates and
the like the allowed functions build), or the template's text. Guaranteed: deterministic (the same source,
context, randomness and clock give the same result; nothing reads the real clock, the environment or the
outside world); bounded, as every operation charges the Budget, which refuses a step's work past its units
(`budget.STEP_BUDGET`) or its CPU (`budget.STEP_CPU_SECONDS`), and every size (text, collections, nesting) is
checked before the value is built; and nothing is reachable but the context and the allow-listed functions,
methods, module members and filters. Errors: every failure, the user's or a limit's, is a
`parsing.ExpressionError` whose message is for the user (a limit's names `LimitExceeded`); the checks at task
creation (`parsing.check_expression`, `templates.check_template`) return their problems as messages instead;
a charge made outside an evaluation (`Budget.charge`, `budget.charge`) raises `budget.LimitExceeded` itself.
This package imports nothing of Mint's but itself.

Where to look:

- budget.py: the work budget and the CPU guard behind it; data.py: plain data, its sizes and depth;
  operators.py: Python's operators as expressions get them.
- parsing.py: parsing and the checks a task gets when it is created; evaluator.py: evaluation.
- templates.py and template_filters.py: Jinja, in an immutable sandbox, with charged filters.
- functions.py, methods.py, shims.py: the functions, methods and modules (`json`, `re`, `datetime`, ...) an
  expression may reach, with regex.py (RE2), csv_rows.py, text_helpers.py and fstrings.py behind them;
  unavailable.py names what Julep offered and Mint refuses.

How a task's raw value is read (expression, template or text) is not the sandbox's business: see
`workflows/dialect.py` and `workflows/values.py`.
"""
