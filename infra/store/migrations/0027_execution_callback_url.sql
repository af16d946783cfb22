-- Where an execution reports its statuses (docs/webhooks.md): the create body's callback_url, else its task's,
-- fixed when it is created, so that a restart of it, or a start the reconciler retries, reports there too.
ALTER TABLE executions ADD COLUMN callback_url text;
