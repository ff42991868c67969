"""The report's JSON schema (``sirius/schemas/report-4.json``) as the tests check it."""

import json

import jsonschema

from sirius.api import report_schema

_VALIDATOR = jsonschema.Draft202012Validator(report_schema())


def assert_follows_schema(rep: dict) -> None:
    """Every way ``rep``, as ``--report`` writes it (JSON), differs from the schema, in one failure."""
    errors = sorted(_VALIDATOR.iter_errors(json.loads(json.dumps(rep))), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path)) or '(top)'}: {e.message[:300]}" for e in errors)
