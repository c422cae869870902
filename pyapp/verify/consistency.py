"""What the writer of a completion or a model record guarantees, checked on reading.

A completion is written by the model worker (`site/model_worker/model_worker.js`), its
client's failed replies (`pyapp.browser.model.failed`, through `finish_for`), or natively by
`over_input_budget` and the synthetic models. Whichever wrote it, its fields agree with each
other and with the caps of its call; `reproduce` reports each disagreement as one
`Mismatch` naming the JSON path and the rule (docs/specification.md §5, "Consistency"):

    finish null        only when no generation ran: failure says why, with a code of
                       NO_GENERATION_CODES; text "", output_tokens, output_token_ids,
                       generation_ms and time_to_first_token_ms null
    eos/length/bytes   a generation that ended normally: failure null, output_tokens counted
    timeout/cancelled  failure with that code
    failure code C     finish_reason is finish_for(C) (input_budget ... null, timeout, cancelled,
                       any other code error)
    length             output_tokens == the call's caps.max_new_tokens
    input_tokens       over the call's caps.max_input_tokens: failure input_budget; a recorded
                       input_budget failure counted more than the cap
    output_token_ids   as many as output_tokens

A model record: a successful load names its `backend_actual` and no error; a failed one its
`error_code` and no backend; a model whose last load succeeded records that load's
`backend_actual`.
"""

from __future__ import annotations

import json

from pyapp.records import NO_GENERATION_CODES, Caps, Completion, ModelProvenance, finish_for
from pyapp.records import Mismatch as Mismatch  # re-exported for reproduce

NOTHING_MEASURED = "output_tokens, output_token_ids, generation_ms and time_to_first_token_ms"
"""What a completion that generated nothing leaves null."""

ENDED_NORMALLY = ("eos", "length", "bytes")
"""Finish reasons of a generation that stopped by itself or at a cap: never a failure."""


def _no_generation(completion: Completion, where: str) -> list[Mismatch]:
    """Finish null: nothing was generated, and the failure says why (one line for all)."""
    recorded = [
        name
        for name, present in (
            ("text", completion.text != ""),
            ("output_tokens", completion.output_tokens is not None),
            ("output_token_ids", completion.output_token_ids is not None),
            ("generation_ms", completion.generation_ms is not None),
            ("time_to_first_token_ms", completion.time_to_first_token_ms is not None),
            ("no failure", completion.failure is None),
        )
        if present
    ]
    if not recorded:
        return []
    return [
        Mismatch(
            f"{where}.finish_reason",
            f"is null, but the completion records {', '.join(recorded)} (null only when no "
            f"generation ran: then failure says why, text is empty, {NOTHING_MEASURED} null)",
        )
    ]


def _finish_and_failure(completion: Completion, where: str) -> list[Mismatch]:
    finish = completion.finish_reason
    failure = completion.failure
    if finish is None:
        found = _no_generation(completion, where)
        if found or failure is None:
            return found
    if failure is not None:
        implied = finish_for(failure.code)
        if finish != implied:
            return [
                Mismatch(
                    f"{where}.finish_reason",
                    f"is {json.dumps(finish)}, but failure {failure.code!r} gives "
                    f"{json.dumps(implied)} (null only for "
                    f"{', '.join(sorted(NO_GENERATION_CODES))}; timeout and cancelled "
                    "their own; any other failure error)",
                )
            ]
        return []
    if finish in ("timeout", "cancelled"):
        return [
            Mismatch(
                f"{where}.failure",
                f"is null, but finish_reason {finish!r} records failure {finish!r}",
            )
        ]
    if finish in ENDED_NORMALLY and completion.output_tokens is None:
        return [
            Mismatch(
                f"{where}.output_tokens",
                f"is null, but finish_reason {finish!r} ended a generation, which counts "
                "its output tokens (null only when none ran or it broke down)",
            )
        ]
    return []


def _against_caps(completion: Completion, caps: Caps, where: str) -> list[Mismatch]:
    found: list[Mismatch] = []
    finish, output = completion.finish_reason, completion.output_tokens
    if finish == "length" and output is not None and output != caps.max_new_tokens:
        found.append(
            Mismatch(
                f"{where}.output_tokens",
                f"is {output}, but finish_reason 'length' stops at the call's "
                f"max_new_tokens: expected {caps.max_new_tokens}",
            )
        )
    inputs = completion.input_tokens
    code = completion.failure.code if completion.failure is not None else None
    if inputs is not None and inputs > caps.max_input_tokens and code != "input_budget":
        found.append(
            Mismatch(
                f"{where}.input_tokens",
                f"is {inputs}, over the call's max_input_tokens {caps.max_input_tokens}, "
                "but the completion does not fail input_budget (over the cap nothing is "
                "generated)",
            )
        )
    if code == "input_budget" and inputs is not None and inputs <= caps.max_input_tokens:
        found.append(
            Mismatch(
                f"{where}.input_tokens",
                f"is {inputs}, within the call's max_input_tokens {caps.max_input_tokens}, "
                "but the completion fails input_budget",
            )
        )
    ids = completion.output_token_ids
    if ids is not None and output is not None and len(ids) != output:
        found.append(
            Mismatch(
                f"{where}.output_tokens",
                f"is {output}, but output_token_ids holds {len(ids)} ids",
            )
        )
    return found


def completion_mismatches(completion: Completion, caps: Caps | None, where: str) -> list[Mismatch]:
    """Every rule a written completion keeps that this one breaks (`where` names it; `caps`
    are its call's, when recorded)."""
    found = _finish_and_failure(completion, where)
    if caps is not None:
        found += _against_caps(completion, caps, where)
    found += hard_stop_mismatches(completion, where)
    return found


def hard_stop_mismatches(completion: Completion, where: str) -> list[Mismatch]:
    """A hard stop's judgement follows its own numbers (stalled exactly when the silence
    exceeds the window, the window never below its floor) and the completion carries it
    (`stalled`: the failure `stalled`; `timeout`: finish `timeout`), and a `stalled`
    failure always comes with its judgement (docs/specification.md §4a)."""
    stop, code = completion.hard_stop, (completion.failure.code if completion.failure else None)
    at = f"{where}.hard_stop"
    if stop is None:
        if code == "stalled":
            return [Mismatch(at, "is null, but the completion failed with `stalled`")]
        return []
    found: list[Mismatch] = []
    judged = "stalled" if stop.silent_ms > stop.window_ms else "timeout"
    if stop.judged != judged:
        found.append(
            Mismatch(
                f"{at}.judged",
                f"is {stop.judged!r}, but {stop.silent_ms} ms without a token against a window "
                f"of {stop.window_ms} ms is {judged!r}",
            )
        )
    if stop.window_ms < stop.floor_ms:
        found.append(Mismatch(f"{at}.window_ms", f"is below its floor of {stop.floor_ms} ms"))
    wanted = "stalled" if stop.judged == "stalled" else "timeout"
    if code != wanted:
        detail = f"judged {stop.judged!r}, but the completion fails with {code!r}"
        found.append(Mismatch(at, detail))
    return found


def model_mismatches(model: ModelProvenance) -> list[Mismatch]:
    """Every rule the model record's loads and backend keep that this one breaks."""
    found: list[Mismatch] = []
    for i, load in enumerate(model.loads):
        at = f"$.model.loads[{i}]"
        if load.ok and load.backend_actual is None:
            found.append(
                Mismatch(
                    f"{at}.backend_actual", "is null, but the load succeeded (null only if none)"
                )
            )
        if load.ok and load.error_code is not None:
            found.append(
                Mismatch(f"{at}.error_code", f"is {load.error_code!r}, but the load succeeded")
            )
        if not load.ok and load.error_code is None:
            found.append(
                Mismatch(f"{at}.error_code", "is null, but the load failed and must say why")
            )
        if not load.ok and load.backend_actual is not None:
            found.append(
                Mismatch(
                    f"{at}.backend_actual",
                    f"is {load.backend_actual!r}, but the load failed: no backend runs the model",
                )
            )
    last = model.loads[-1] if model.loads else None
    if last is not None and last.ok and model.backend_actual != last.backend_actual:
        detail = (
            "is null" if model.backend_actual is None else f"is {model.backend_actual!r}"
        ) + f", but the last load ($.model.loads[{len(model.loads) - 1}]) succeeded"
        found.append(
            Mismatch(
                "$.model.backend_actual",
                f"{detail} on {last.backend_actual!r} (the backend never changes silently)"
                if model.backend_actual is not None
                else f"{detail} (null only when the last load failed)",
            )
        )
    return found
