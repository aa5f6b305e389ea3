"""Route mode: one member of a collection drives an agent, turn by turn.

`conversation.py` names a conversation and keeps which member answers it
(in the store, so a restart or another replica keeps it); `engine.py` picks
the member, fails over before the first byte and hands the turn's chunks
on; `shadow.py` lets other members answer the same turn in the background,
for the record only.
"""
