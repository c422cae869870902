"""Records, schemas and reproduction: JSON helpers and record bases (``base``), the trace and
its generated schema (``trace``), and re-deriving a trace offline (``reproduce``)."""
