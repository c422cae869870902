"""Every message the page speaks, written once: the page ⇄ Python channel (``messages``: one
record per request and event, the failure codes and the envelope; ``results``: the record
each reply's result holds; ``exports``: the schema, ``site/lab_protocol.js`` and the docs'
tables generated from them) and the model channel (``model_messages``: Python <-> model
client <-> model worker; ``model_exports``: ``workers/model_protocol.js``, its schema and
docs/models.md's tables generated from them)."""
