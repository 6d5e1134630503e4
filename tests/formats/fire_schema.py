"""TEST-ONLY oracle: the FIRE authors' data model as a JSON Schema, written from the field list of
the released labels (Rodriguez et al. 2023), not from fireval's code.

Top level ``{annotations, disagreements, source_ds, source_data_md5, source_annotator_map_md5,
created_ds, email, creator, website, license, datasets}``. An annotation has
``annotator_ids: [int]``, ``label: "relevant"|"irrelevant"``, ``video_id: str``, ``query: str``,
``annotator_labels: [label]``, ``response_ids: [int]``, ``queue_ids: [int]``,
``models: ["CLIP4CLIP"|"SSB"|"CE"]`` and ``dataset: "MSVD"|"MSRVTT"``; a disagreement has the same
fields without ``label``. Required strings are strings, never null.
"""

from __future__ import annotations

from typing import Any

LABEL = {"enum": ["relevant", "irrelevant"]}
DATASET = {"enum": ["MSVD", "MSRVTT"]}
MODEL = {"enum": ["CLIP4CLIP", "SSB", "CE"]}
INTS = {"type": "array", "items": {"type": "integer"}}

_COMMON: dict[str, Any] = {
    "annotator_ids": INTS,
    "video_id": {"type": "string"},
    "query": {"type": "string"},
    "annotator_labels": {"type": "array", "items": LABEL},
    "response_ids": INTS,
    "queue_ids": INTS,
    "models": {"type": "array", "items": MODEL},
    "dataset": DATASET,
}

ANNOTATION = {
    "type": "object",
    "properties": {**_COMMON, "label": LABEL},
    "required": [*_COMMON, "label"],
    "additionalProperties": False,
}

DISAGREEMENT = {
    "type": "object",
    "properties": dict(_COMMON),
    "required": list(_COMMON),
    "additionalProperties": False,
}

_STRINGS = (
    "source_ds",
    "source_data_md5",
    "source_annotator_map_md5",
    "created_ds",
    "email",
    "creator",
    "website",
    "license",
)

FIRE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "annotations": {"type": "array", "items": ANNOTATION},
        "disagreements": {"type": "array", "items": DISAGREEMENT},
        **{k: {"type": "string"} for k in _STRINGS},
        "datasets": {"type": "array", "items": DATASET},
    },
    "required": ["annotations", "disagreements", *_STRINGS, "datasets"],
    "additionalProperties": False,
}


def validation_errors(doc: Any) -> list[str]:
    """Every violation of the data model (jsonschema), as ``path: message`` strings."""
    import jsonschema

    v = jsonschema.Draft202012Validator(FIRE_SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]
