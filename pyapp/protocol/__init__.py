"""Every message the page speaks, and every name it shares with Python, written once.

The two channels share one envelope (`envelope`: building and reading requests, replies and
events for any channel, and `Channel`, what a channel is to the generator) and one generator
(`generate`: a channel's JSON Schema, docs tables and generated JavaScript module), with the
JSDoc types of its messages written from that schema (`jsdoc`). The page ⇄ Python channel:
`messages` (one record per request and event, the failure codes), `page_messages` (the
requests the page answers itself, never Python), `results` (the record each reply's result
holds) and `exports` (its schema, `site/lab_protocol.js`, `site/lab_types.js` and
docs/hosting.md's tables). The model channel: `model_messages` (Python <-> model client <->
model worker) and `model_exports` (`site/common/model_protocol.js`,
`site/common/model_types.js`, its schema and docs/models.md's tables). `page` holds the other
names the page shares: the `xworker.sync` names, the URL parameters and the driver API
`window.lab`, generated into `site/lab_protocol.js` and the docs by `python -m pyapp schema`."""
