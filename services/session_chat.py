"""What a session's chat would send, without sending it (the chat itself is services/chat/chatter.py's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from infra.store.tables import AGENTS
from services.chat.chatter import Chatter
from services.chat.request import Chat
from services.chat.session import ChatSession
from services.clients import Clients
from services.errors import NotFound
from services.ids import checked_id
from services.sessions import get as get_session


@dataclass(frozen=True)
class Rendered:
    messages: Sequence[Mapping[str, object]]  # as the model would get them
    # The tools the model would be offered (its transfer tools aside, as Julep's render answers them).
    tools: Sequence[Mapping[str, object]]
    docs: Sequence[Mapping[str, object]]  # the docs recalled
    dropped: int  # messages left out to fit the context


async def render(clients: Clients, chatter: Chatter, developer: str, session_id: str, body: Chat) -> Rendered:
    """The exact messages a chat with this body would send, and the tools and docs with them."""
    session = ChatSession.of(await get_session(clients, developer, session_id))
    agent_id = body.agent or session.agents[0]
    agent = await clients.store.get(AGENTS, developer, checked_id(agent_id, "agent"))
    if agent is None:
        raise NotFound("agent", agent_id)
    cast = await chatter.cast(developer, session, agent, body)
    context, docs = await chatter.prepare(developer, session, body, cast)
    return Rendered(context.messages, cast.offered_tools(), docs, context.dropped)
