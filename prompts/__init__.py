"""Versioned prompt templates (data only): `<name>/<version>.txt`.

A prompt revision is a new measurement condition: never edit a released file; add a
new version beside it. `pyapp.records.prompts` renders them and records each template's id and
SHA-256 in every rendered prompt.
"""
