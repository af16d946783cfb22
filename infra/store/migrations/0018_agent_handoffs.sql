-- The agents an agent may hand a conversation to (issue 17, handoffs): their ids, in the order given. A list
-- of the developer's own agent ids, checked when the agent is written; an id whose agent was deleted since is
-- skipped when the list is read (no foreign key can point from inside a JSON list).
ALTER TABLE agents ADD COLUMN handoffs jsonb NOT NULL DEFAULT '[]';
