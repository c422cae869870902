"""Records, schemas and reproduction: JSON helpers and record bases (``base``), the trace and
its generated schema (``trace``), documents read under input limits (``documents``), the
evidence labels (``evidence``), re-deriving a trace offline (``reproduce``) and the rules
by which its fields must agree (``consistency``)."""
