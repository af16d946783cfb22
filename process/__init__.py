"""The process layer: the `mint` command, the composition root that assembles API and worker
(stack.py), `mint up`'s worker process and local services, and `mint run`."""
