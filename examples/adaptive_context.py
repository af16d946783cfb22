"""Adaptive context: a session with a small token budget keeps every message, compressed.

Offline, from the answers written for this example in examples/recordings.jsonl (a real model answers the same
way with OPENAI_API_KEY set):

    MINT_MODEL_REPLAY=examples/recordings.jsonl mint up
    python examples/adaptive_context.py http://127.0.0.1:8080

Past half the budget a chat starts compressing the history in the background; a chat over the budget waits
for it. The summarizer entries (key entities, a summary, trimmed messages) replace older entries in the context
and stay in the history with what they replace.
"""

import sys
from pathlib import Path

from julep import Julep

URL = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
KEY = Path(".mint/api_key").read_text().strip()  # or the key `mint up` printed
QUESTIONS = [
    "I am going to Lisbon in spring. What should I pack?",
    "Which monuments should I book, and when?",
    "Is a day trip worth it?",
    "What about the evenings?",
    "Remind me: which trams climb the hills?",
    "And which station for Sintra?",
]

client = Julep(api_key=KEY, base_url=URL)
agent = client.agents.create(name="Guide", model="gpt-4o-mini", about="a travel guide for Lisbon")
session = client.sessions.create(agent=agent.id, token_budget=300, context_overflow="adaptive")
for question in QUESTIONS:
    answer = client.sessions.chat(session.id, messages=[{"role": "user", "content": question}])
    print(f"> {question}\n{answer.choices[0].message.content}\n")

entries = client.sessions.history(session.id).entries
summarizer = [e for e in entries if e.source == "summarizer"]
for entry in summarizer:
    replaces = len(getattr(entry, "replaces", None) or [])
    print(f"[{entry.role}] {str(entry.content)[:70]}... (replaces {replaces} entries)")
assert summarizer, "the history was never compressed"
