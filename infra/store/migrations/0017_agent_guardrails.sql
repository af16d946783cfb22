-- An agent's guardrails (issue 17): `{input: [...], output: [...]}`, checked when the agent is written
-- (workflows/language/guardrails.py); NULL for an agent without any.
ALTER TABLE agents ADD COLUMN guardrails jsonb;
