"""One knob type and one env builder: values and defaults declared once, every env id built the same way."""

from __future__ import annotations

import dataclasses
import warnings

import gymnasium as gym
import pytest

from tests._reference.scripted import END_OF_TURN
from tooluse_agents.cli.eval import eval_config, parse_run_args, run_parser
from tooluse_agents.eval.run import PROTOCOL_KNOBS
from tooluse_agents.train.grpo.tasks import TRAIN_PROTOCOL, env_factory
from tooluse_gym.envs.builder import TASKS_ENV_ID, TaskPool
from tooluse_gym.envs.flags import SWEPT, given_knobs
from tooluse_gym.envs.knobs import CHOICES, Knobs, optional_knobs_model
from tooluse_gym.envs.multi_turn import bfcl_pool
from tooluse_gym.tasks import bfcl, evenly_spaced

MISS_FUNC_47 = "multi_turn_miss_func_47"


def test_the_cli_offers_every_knob_with_its_values_and_resolves_unset_ones_to_the_env_ids_defaults():
    parser = run_parser("run")
    args, given = parse_run_args("run", ["--agent", "oracle", "--out", "x"])
    flags = {a.dest: a for a in parser._actions}
    assert set(Knobs.names()) <= set(flags)  # one flag per knob, --validate-args included
    for knob, choices in CHOICES.items():
        assert tuple(flags[knob].choices) == choices, knob
    assert given_knobs(args) == {}  # unset: the env id's defaults
    assert eval_config(args, given).protocol == Knobs()
    scenario = parse_run_args("run", ["--agent", "oracle", "--out", "x", "--scenarios", "s.yaml", "--no-validate-args"])
    assert eval_config(*scenario).protocol == Knobs(decoder="lenient", validate_args=False)
    sweep = run_parser("sweep")
    swept = {a.dest: a.nargs for a in sweep._actions if a.dest in Knobs.names()}
    assert {k for k, nargs in swept.items() if nargs == "+"} == set(SWEPT)
    assert set(PROTOCOL_KNOBS) == {f.name for f in dataclasses.fields(Knobs)}


def test_unknown_knobs_and_values_fail_with_the_valid_ones():
    with pytest.raises(TypeError, match="unknown knobs \\['temprature'\\]; the knobs are: template, reasoning"):
        Knobs().with_defaults(temprature=1.0)
    with pytest.raises(TypeError, match="unknown knobs"):
        gym.make("ToolUse-MultiTurn-v0", temprature=1.0)
    with pytest.raises(ValueError, match="max_steps_per_turn must be >= 1"):
        Knobs(max_steps_per_turn=0)
    with pytest.raises(ValueError, match="must be an integer"):
        Knobs(max_steps_per_turn=True)


def test_validate_args_follows_the_decoder_unless_set():
    assert not Knobs().validates_args and Knobs(decoder="lenient").validates_args
    assert Knobs(validate_args=True).validates_args and not Knobs(decoder="lenient", validate_args=False).validates_args
    # replacing the decoder of an env id's defaults re-resolves it (None stays None in the field)
    assert Knobs().with_defaults(decoder="lenient").validates_args


def test_each_env_id_differs_only_by_its_defaults(tmp_path):
    cards = {}
    for env_id, kwargs in [
        ("ToolUse-MultiTurn-v0", {}),
        ("ToolUse-Scenario-v0", {"path": "scenarios/curriculum/heldout.yaml"}),
        (TASKS_ENV_ID, {"pool": bfcl_pool(bfcl.load_bfcl_tasks("base", ["multi_turn_base_0"]), label="base")}),
    ]:
        env = gym.make(env_id, **kwargs)
        cards[env_id] = env.reset(seed=0)[1]["protocol"]
        env.close()
    assert cards["ToolUse-MultiTurn-v0"]["decoder"] == "bfcl" and not cards["ToolUse-MultiTurn-v0"]["validate_args"]
    for env_id in ("ToolUse-Scenario-v0", TASKS_ENV_ID):
        assert cards[env_id]["decoder"] == "lenient" and cards[env_id]["validate_args"], env_id
    for knob in ("template", "reasoning", "system_prompt", "tool_format", "tool_results", "max_steps_per_turn"):
        assert len({c[knob] for c in cards.values()}) == 1, knob


def test_training_envs_have_a_spec_that_rebuilds_them():
    pool = bfcl_pool(bfcl.load_bfcl_tasks("base", ["multi_turn_base_0", "multi_turn_base_1"]), label="bfcl:base")
    protocol = TRAIN_PROTOCOL.with_defaults(max_steps_per_turn=3)
    env = env_factory(pool, protocol)()
    _, info = env.reset(seed=1)
    assert env.spec.id == TASKS_ENV_ID and info["protocol"]["env_id"] == TASKS_ENV_ID
    assert info["protocol"]["category"] == "bfcl:base" and info["protocol"]["system_prompt"] == "strong"
    again = gym.make(env.spec)
    _, info_again = again.reset(seed=1)
    assert info_again["protocol"] == info["protocol"]
    assert [t.task_id for t in again.unwrapped.tasks] == ["multi_turn_base_0", "multi_turn_base_1"]
    assert repr(pool).startswith("TaskPool(2 tasks, ") and "label='bfcl:base'" in repr(pool)
    with pytest.raises(TypeError, match="TaskPool"):
        gym.make(TASKS_ENV_ID, pool=["not", "a", "pool"])
    with pytest.raises(ValueError, match="empty"):
        gym.make(TASKS_ENV_ID, pool=TaskPool((), {}))


@pytest.mark.parametrize("system_prompt", ["bfcl", "strong", "none", "Call tools.", "Tools: {functions}"])
def test_the_system_prompt_wrapper_owns_the_held_out_notice(system_prompt):
    env = gym.make("ToolUse-MultiTurn-v0", category="miss_func", system_prompt=system_prompt)
    env.reset(options={"task_id": MISS_FUNC_47})
    for action in ("[find(path='.')]", END_OF_TURN, END_OF_TURN):
        obs, *_ = env.step(action)
    plain = bfcl.holdout_notice_template(prompting=False)
    carries = system_prompt in ("bfcl", "strong", "Tools: {functions}")
    if carries:
        docs = str([dict(d) for d in env.unwrapped.task.held_out[2]])
        expected = bfcl.holdout_notice_template(prompting=True).replace("{functions}", docs)
    else:
        expected = plain
    assert obs["messages"][-1]["content"] == expected
    assert env.unwrapped.messages[-1]["content"] == expected  # the env's own transcript says what was sent
    # the builder picks the notice from the system prompt (no wrapper rewrites the base env)
    assert env.unwrapped.config.holdout_notice == (bfcl.holdout_notice_template(prompting=True) if carries else plain)
    env.close()


def test_evenly_spaced():
    assert evenly_spaced(list(range(10)), 3) == [0, 3, 6]
    assert evenly_spaced(list(range(4)), None) == evenly_spaced(list(range(4)), 9) == [0, 1, 2, 3]
    assert evenly_spaced(list(range(5)), 0) == []


def test_the_optional_knobs_model_has_one_unset_field_per_knob():
    pydantic = pytest.importorskip("pydantic")
    model = optional_knobs_model(pydantic.BaseModel, "Fields", exclude=("tokenizer", "chat_template"))
    names = [n for n in Knobs.names() if n not in ("tokenizer", "chat_template")]
    assert list(model.model_fields) == names  # the verifiers adapter's --env.taskset.knobs.* names
    assert all(f.default is None and f.description for f in model.model_fields.values())
    assert model().model_dump(exclude_none=True) == {}
    given = model(tool_format="json", strict_tools=True, max_steps_per_turn=3).model_dump(exclude_none=True)
    assert given == {"tool_format": "json", "strict_tools": True, "max_steps_per_turn": 3}
    with pytest.raises(pydantic.ValidationError):
        model(max_steps_per_turn="many")


BAD_VALUES = [
    ("template", 1),
    ("reasoning", None),
    ("system_prompt", 3),
    ("tool_format", b"json"),
    ("tool_results", None),
    ("decoder", True),
    ("strict_tools", "yes"),
    ("strict_tools", 1),
    ("validate_args", "no"),
    ("max_steps_per_turn", "3"),
    ("max_steps_per_turn", True),
    ("max_steps_per_turn", 2.0),
    ("tokenizer", 3),
    ("chat_template", ["{{ messages }}"]),
    ("prompt_format", 3),
    ("prompt_format", "json"),
    ("prompt_format", "ret_fmt=python&tool_call_tag=True&func_doc_fmt=json&prompt_fmt=markdown&style=classic"),
]


@pytest.mark.parametrize(("knob", "value"), BAD_VALUES)
def test_every_knob_value_is_checked_against_its_declared_type(knob, value):
    with pytest.raises(ValueError, match=f"^{knob} must be "):
        Knobs(**{knob: value})
    with pytest.raises(ValueError, match=f"^{knob} must be "):
        Knobs().with_defaults(**{knob: value})


def test_bad_knob_values_never_reach_the_card():
    assert {knob for knob, _ in BAD_VALUES} == set(Knobs.names())  # every knob has a wrong value tried above
    with pytest.raises(ValueError, match="strict_tools must be a bool \\(True or False\\); got 'yes' \\(str\\)"):
        gym.make("ToolUse-MultiTurn-v0", strict_tools="yes")
    with pytest.raises(ValueError, match="validate_args must be a bool \\(True or False\\) or None; got 'no'"):
        gym.make("ToolUse-MultiTurn-v0", validate_args="no")
    # the declared types themselves pass
    knobs = Knobs(strict_tools=True, validate_args=None, max_steps_per_turn=3, tokenizer="t", chat_template="c")
    assert knobs.strict_tools is True and Knobs(validate_args=False).validates_args is False


def test_a_system_prompt_that_looks_like_a_mistyped_name_warns():
    with pytest.warns(UserWarning, match="system_prompt 'strnog' is not a named prompt .*did you mean 'strong'"):
        Knobs(system_prompt="strnog")
    with pytest.warns(UserWarning, match="'bfc' is not a named prompt"):
        gym.make("ToolUse-MultiTurn-v0", system_prompt="bfc", task_ids=["multi_turn_base_0"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # names and prompt text do not warn
        for prompt in ("strong", "none", "bfcl", "Be brief.", "You call tools.\n{functions}"):
            Knobs(system_prompt=prompt)
