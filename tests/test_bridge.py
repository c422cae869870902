import json

from tracecheck import assert_valid_trace

from pyapp.browser import handle


def call(**request):
    return json.loads(handle(json.dumps(request)))


def test_hello_echoes_the_request_id():
    reply = call(type="hello", id=41)
    assert reply["ok"] and reply["id"] == 41 and reply["type"] == "hello"
    assert reply["result"]["generator_version"] == "tasks/1"


def test_tasks_for_a_seed_and_params():
    reply = call(type="tasks", id=1, seed=7, params={"probe_pairs": 0})
    assert reply["ok"] and reply["result"]["seed"] == 7
    assert len(reply["result"]["tasks"]) == 12


def test_run_supplied_returns_a_valid_trace_with_browser_info():
    environment = {"user_agent": "UA", "cross_origin_isolated": True, "hardware_concurrency": 4}
    reply = call(type="run_supplied", id=2, seed=1729, environment=environment)
    assert reply["ok"], reply
    trace = reply["result"]["trace"]
    assert_valid_trace(trace)
    assert trace["environment"]["browser"]["user_agent"] == "UA"
    assert trace["summary"]["correct"] == 24


def test_sympy_check_agrees():
    reply = call(type="sympy_check", id=3, seed=1729)
    assert reply["ok"] and reply["result"]["agreements"] == 24


def test_errors_are_replies_not_exceptions():
    assert json.loads(handle("nope"))["error"]["code"] == "bad_request"
    assert json.loads(handle("[]"))["error"]["code"] == "bad_request"
    assert call(type="launch", id=4)["error"]["code"] == "unknown_type"
    # an ill-typed field is refused by the message record before any handler runs
    assert call(type="tasks", id=5, seed="x")["error"]["code"] == "bad_request"
    assert call(type="tasks", id=6, params={"determinants": -1})["error"]["code"] == "bad_params"
    bad_env = call(type="run_supplied", id=7, environment={"user_agent": 1})
    assert bad_env["error"]["code"] == "bad_request" and bad_env["id"] == 7
