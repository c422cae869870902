"""The experiment's order: measure the profile, freeze it, then run the held-out tasks
(``phases``)."""
