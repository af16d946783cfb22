"""What crosses the Temporal boundary: workflow, signal and activity names, the payloads they carry, and the
transition rules. The bottom layer: pure data, no I/O, importing nothing of Mint's, so that workflows/,
activities/, api/ and infra/ can all share it (and the workflow sandbox passes it through)."""
