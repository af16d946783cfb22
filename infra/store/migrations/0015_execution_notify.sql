-- Streams are pushed, not polled (mint/store/execution_events.py): a transaction that changes what a stream
-- shows of an execution (its status, its transitions, its error) notifies `mint_executions` with the
-- execution's id, and Postgres delivers that when the transaction commits, never before its rows are
-- visible. Every writer goes through this row (the transition writer updates it in the transaction that
-- adds transitions; the API, MARK_FAILED and the reconciler change its status), so one trigger covers them
-- all, writers still to come included. The notification carries no data: listeners re-read as their
-- developer. Postgres folds identical notifications of one transaction into one.
CREATE FUNCTION notify_execution_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mint_executions', NEW.id::text);
    RETURN NULL;
END
$$;

-- Not on other columns: the reconciler's claim (reconciled_at) changes nothing a stream shows.
CREATE TRIGGER execution_changed AFTER UPDATE ON executions FOR EACH ROW
    WHEN ((OLD.status, OLD.transition_count, OLD.error) IS DISTINCT FROM (NEW.status, NEW.transition_count, NEW.error))
    EXECUTE FUNCTION notify_execution_changed();
