"""Route mode: one member of a collection drives an agent, turn by turn.

`members.py` says who may drive a turn and in which order; `conversation.py`
names a conversation (which member answers it is `store/conversations.py`'s:
in memory, with the store as the copy a restart or another replica reads);
`engine.py` picks the member, fails
over before the first byte and hands the turn's chunks on; `shadow.py` lets
other members answer the same turn in the background, for the record only;
`record.py` names the tools a turn called on its call-log row.
"""
