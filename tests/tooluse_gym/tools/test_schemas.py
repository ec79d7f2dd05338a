from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tooluse_gym.tasks import bfcl
from tooluse_gym.tools.runtime import ToolRuntime
from tooluse_gym.tools.schemas import (
    ArgumentValidator,
    arguments_schema,
    compile_predicate,
    openai_tool,
    to_json_schema,
    validation_error,
)

MEAN = {
    "name": "mean",
    "description": "Mean.",
    "parameters": {
        "type": "dict",
        "properties": {
            "numbers": {"type": "array", "items": {"type": "float"}},
            "label": {"type": "string", "default": None},
            "opts": {"type": "dict", "properties": {"k": {"type": "integer"}}, "required": ["k"]},
        },
        "required": ["numbers"],
    },
}


def test_bfcl_types_are_mapped():
    schema = to_json_schema(MEAN["parameters"])
    assert schema["type"] == "object"
    assert schema["properties"]["numbers"]["items"]["type"] == "number"
    tool = openai_tool(MEAN)
    assert tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"


def test_validation_messages():
    assert validation_error(MEAN, {"numbers": [1, 2.5]}) is None
    assert validation_error(MEAN, {"numbers": (1, 2)}) is None  # tuples are arrays
    assert validation_error(MEAN, {"numbers": [1], "label": None}) is None  # optional, default None
    assert "is not of type 'number'" in validation_error(MEAN, {"numbers": ["a"]})
    assert "'numbers' is a required property" in validation_error(MEAN, {})
    assert "Additional properties" in validation_error(MEAN, {"numbers": [], "evil": 1})
    assert "is not of type 'number'" in validation_error(MEAN, {"numbers": [True]})  # bool is not a number
    assert "'k' is a required property" in validation_error(MEAN, {"numbers": [], "opts": {}})


def test_every_ground_truth_call_validates(all_tasks):
    classes, stateless = bfcl.backend_classes(), bfcl.stateless_backends()
    checked = 0
    for task in all_tasks:
        runtime = ToolRuntime(task, classes, stateless)
        docs = {d["name"]: bfcl.validation_doc(d) for d in task.all_functions()}
        for turn in task.ground_truth:
            for call in turn:
                assert validation_error(docs[call.name], runtime.keyword_arguments(call)) is None, (task.task_id, call)
                checked += 1
    assert checked == 4625


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.sampled_from(["k", "numbers", "label", "x"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.sampled_from(["numbers", "label", "opts", "other"]), values, max_size=3))
def test_fast_predicate_agrees_with_jsonschema(arguments):
    schema = arguments_schema(MEAN)
    fast = compile_predicate(schema)
    assert fast is not None
    assert fast(arguments) == ArgumentValidator(schema).is_valid(arguments)


def test_fast_predicate_agrees_on_every_bfcl_schema(all_tasks):
    samples = [None, True, 0, 1.5, 2.0, "s", [], [1, "a"], (1,), {}, {"a": 1}]
    seen = set()
    for task in all_tasks[:200]:
        for doc in task.all_functions():
            if doc["name"] in seen:
                continue
            seen.add(doc["name"])
            schema = arguments_schema(doc)
            fast = compile_predicate(schema)
            assert fast is not None, doc["name"]
            validator = ArgumentValidator(schema)
            props = list(schema["properties"])
            for value in samples:
                for name in props:
                    arguments = {p: value for p in props if p == name}
                    assert fast(arguments) == validator.is_valid(arguments), (doc["name"], arguments)
    assert len(seen) > 100
