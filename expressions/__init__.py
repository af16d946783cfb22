"""The expression sandbox: how a task's Python expressions and Jinja templates run on shared workers.

Everything here is deterministic (time and randomness come from the workflow) and bounded: each operation is
charged to a work budget and sizes are checked before a value is built. Where to look:

- budget.py: the work budget and the CPU guard behind it; data.py: plain data, its sizes and depth;
  operators.py: Python's operators as expressions get them.
- expressions.py: parsing and the checks a task gets when it is created; evaluator.py: evaluation.
- templates.py and template_filters.py: Jinja, in an immutable sandbox, with charged filters.
- functions.py, methods.py, shims.py: the functions, methods and modules (`json`, `re`, `datetime`, ...) an
  expression may reach, with regex.py (RE2), csv_rows.py, text_helpers.py and fstrings.py behind them;
  unavailable.py names what Julep offered and Mint refuses.

How a task's raw value is read (expression, template or text) is not the sandbox's business: see
`workflows/dialect.py` and `workflows/values.py`.
"""
