"""Running the conditions and judging them: prompt rendering (``prompts``), the model adapter
contract (``model``), the clock (``clock``), running a reference or model program through the
interpreter (``interpret``), the typed failures and their kinds (``failures``), and the
model-only, model-program and controlled-chain runners (``run``)."""
