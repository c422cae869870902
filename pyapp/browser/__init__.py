"""The browser side of the experiment: the messages between the page and the Python worker
(``messages``: one record per request, reply and event), the one handler table
(``bridge``), the experiment session those handlers drive (``session``), the model
channel's messages (``model_messages``: Python <-> model client <-> model worker), and the
model adapter that reaches the page's model worker (``model``), and what the page shows
for documents a reader opens (``viewer``: Open a trace, Compare runs)."""
