"""Running the conditions and judging them: running a reference or model program through the
interpreter (``interpret``), the typed failures and their kinds (``failures``), and the
model-only and model-program runners and the dispatch of a trial to its condition
(``run``), the controlled chain: its route, per-call judge and runner (``route``), and what
every model condition does with one call and its reply: the Cancel token, the timed call,
parsing one integer (``replies``). The records they build
and the model contract they call are in ``pyapp.records``."""

from pyapp.conditions.failures import FAILURE_KINDS, is_interruption, kind_of
from pyapp.conditions.interpret import run_control_trial, run_supplied
from pyapp.conditions.replies import CancelToken, parse_integer
from pyapp.conditions.route import (
    Reservation,
    call_step,
    chain_capacity_problem,
    chain_result,
    exact_op,
    judge_call,
    plan_route,
    resolve_operand,
    route_call_refusal,
    route_of,
    run_chain,
    unsupported_failure,
    verify_route,
)
from pyapp.conditions.run import (
    ALL_CONDITIONS,
    MODEL_CONDITIONS,
    judge_whole_task,
    run_trial,
    run_whole_task,
    whole_task_prompt,
)

__all__ = [
    "ALL_CONDITIONS",
    "FAILURE_KINDS",
    "MODEL_CONDITIONS",
    "CancelToken",
    "Reservation",
    "call_step",
    "chain_capacity_problem",
    "chain_result",
    "exact_op",
    "is_interruption",
    "judge_call",
    "judge_whole_task",
    "kind_of",
    "parse_integer",
    "plan_route",
    "resolve_operand",
    "route_call_refusal",
    "route_of",
    "run_chain",
    "run_control_trial",
    "run_supplied",
    "run_trial",
    "run_whole_task",
    "unsupported_failure",
    "verify_route",
    "whole_task_prompt",
]
