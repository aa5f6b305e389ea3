"""Route mode: one member of a collection drives an agent, turn by turn.

`members.py` says who may drive a turn and in which order; `conversation.py`
names a conversation and keeps which member answers it (in the store, so a
restart or another replica keeps it); `engine.py` picks the member, fails
over before the first byte and hands the turn's chunks on; `shadow.py` lets
other members answer the same turn in the background, for the record only;
`record.py` names the tools a turn called on its call-log row.
"""
