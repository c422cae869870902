"""The browser side of the experiment: the messages between the page and the Python worker
(``messages``: one record per request and event, the envelope; ``message_results``: the
record each reply's result holds; ``message_exports``: the schema, ``site/lab_protocol.js``
and the docs' tables generated from them), the one handler table (``bridge``), the
experiment session those handlers drive (``session``), the model channel's messages
(``model_messages``: Python <-> model client <-> model worker; ``model_message_exports``:
the files generated from them), and the model adapter that reaches the page's model worker
(``model``), and what the page shows for documents a reader opens (``viewer``: Open a trace,
Compare runs)."""
