"""The browser side of the experiment (its messages are ``pyapp.protocol``'s): the one
handler table (``bridge``), the experiment session those handlers drive (``session``), the
page as a run sees it (``page_link``: events posted or told, the Cancel flag), the model
adapter that reaches the page's model worker (``model``; its generate calls through the
memory it shares with the model worker, ``mailbox``), and what the page shows for
documents a reader opens (``viewer``: Open a trace, Compare runs, and the plots the page
shows, drawn by ``pyapp.report.plots``), the verdict step 4 leads with (``verdict``: the
run's answer in words and its skill picture), and the Study view of a study.json
(``study_view``)."""
