"""The experiment's order: measure the profile, freeze it, then run the held-out tasks
(``phases``), and the ledger of held-out tasks already seen and of infrastructure failures
(``ledger``)."""
