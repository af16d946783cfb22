"""The Inbox's guards for typed waits (workflows/inbox.py): an input its wait's schema refuses is dropped, and
a resume that names its wait (PUT with `wait_id`) is never handed to another open wait."""

from __future__ import annotations

import pytest

from tests.unit.harness import task
from workflows.execution import TaskExecutionWorkflow
from workflows.inbox import Inbox

NUMBER = {"type": "number"}


def test_an_input_the_schema_refuses_is_dropped_and_the_wait_stays_open():
    inbox = Inbox()
    inbox.opened(2, NUMBER)
    assert not inbox.deliver(2, "two")
    assert inbox.answers == {}
    assert inbox.deliver(2, 2)
    assert inbox.answers == {2: 2}


def test_a_resume_that_names_an_answered_wait_is_dropped_not_redirected():
    inbox = Inbox()
    inbox.opened(2)
    inbox.opened(3)
    assert inbox.deliver(3, "b", exact=True)
    assert not inbox.deliver(3, "again", exact=True)
    assert inbox.answers == {3: "b"}
    # Without a wait id, as before: the duplicate goes to the other wait that was open then.
    assert inbox.deliver(3, "a")
    assert inbox.answers == {3: "b", 2: "a"}


def test_a_redirected_resume_must_satisfy_the_schema_of_the_wait_it_reaches():
    inbox = Inbox()
    inbox.opened(2, NUMBER)
    inbox.opened(3)
    assert inbox.deliver(3, "b")
    assert not inbox.deliver(3, "not a number")
    assert inbox.answers == {3: "b"}


def test_an_early_resume_the_schema_refuses_does_not_answer_its_wait():
    inbox = Inbox()
    assert inbox.deliver(4, "four")  # before its wait opens: kept
    inbox.opened(4, NUMBER)
    inbox.take_early(4)
    assert inbox.answers == {} and inbox.early == {}


def test_a_closed_wait_forgets_its_schema():
    inbox = Inbox()
    inbox.opened(2, NUMBER)
    inbox.closed(2)
    assert inbox.schemas == {} and inbox.open == set()


async def test_the_workflow_drops_a_signal_its_waits_schema_refuses(mint):
    """A resume signalled to Temporal directly skips the API's check: the workflow checks it too."""
    spec = task({"label": "n", "wait_for_input": {"info": "$ 'how many?'", "schema": NUMBER}})
    execution_id = await mint.start(spec)
    wait = (await mint.until(execution_id, "wait")).transitions[-1]
    assert wait["output"] == {"info": "how many?", "schema": NUMBER} and wait["step_label"] == "n"
    handle = mint.env.client.get_workflow_handle(execution_id)
    await handle.signal(TaskExecutionWorkflow.resume, {"wait_seq": wait["seq"], "input": "many"})
    with pytest.raises(AssertionError, match="never saw 1 'resume'"):
        await mint.until(execution_id, "resume", timeout=0.3)
    await handle.signal(TaskExecutionWorkflow.resume, {"wait_seq": wait["seq"], "input": 3})
    done = await mint.finish(execution_id)
    assert done.output == 3
