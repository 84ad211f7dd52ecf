"""A resolver strategy: the baseline is the latest model blessed *before* the candidate.

Why not TFX's stock LatestBlessedModelStrategy: it resolves before training and picks the latest
blessed model of all, so on a rerun with nothing changed the baseline becomes the cached
candidate itself. The Evaluator's inputs then differ from the previous run, its cache misses, it
compares a model with itself, and the Pusher pushes the same model again. Anchoring the baseline
to the candidate ("blessed models older than this one") gives the same baseline for the same
candidate, so an unchanged rerun is served from the cache end to end, while a newly trained
candidate is still compared with the last blessed model before it.
"""
from typing import Dict, List, Optional

from tfx import types
from tfx.dsl.components.common import resolver

import ml_metadata as mlmd

CANDIDATE_KEY = 'candidate'
MODEL_KEY = 'model'
BLESSING_KEY = 'model_blessing'
# Custom properties that the stock Evaluator writes on its ModelBlessing output.
_CURRENT_MODEL_ID = 'current_model_id'
_BLESSED = 'blessed'


def latest_blessed_before(candidate_id: int, models: List[types.Artifact],
                          blessings: List[types.Artifact]) -> Dict[str, List[types.Artifact]]:
    """Picks the newest blessed model whose id is lower than the candidate's (MLMD ids grow)."""
    blessed = {b.get_int_custom_property(_CURRENT_MODEL_ID): b for b in blessings
               if b.get_int_custom_property(_BLESSED) == 1}
    for model in sorted(models, key=lambda m: m.id, reverse=True):
        if model.id < candidate_id and model.id in blessed:
            return {MODEL_KEY: [model], BLESSING_KEY: [blessed[model.id]]}
    return {MODEL_KEY: [], BLESSING_KEY: []}


class LatestBlessedBeforeCandidateStrategy(resolver.ResolverStrategy):
    """Inputs: `candidate` (the trainer's model), `model` and `model_blessing` (all of them)."""

    def resolve_artifacts(self, store: mlmd.MetadataStore,
                          input_dict: Dict[str, List[types.Artifact]]
                          ) -> Optional[Dict[str, List[types.Artifact]]]:
        del store  # everything needed is in the resolved channels
        candidates = input_dict.get(CANDIDATE_KEY, [])
        if not candidates:
            return {key: [] for key in input_dict}
        candidate_id = max(c.id for c in candidates)
        result = latest_blessed_before(candidate_id, input_dict.get(MODEL_KEY, []),
                                       input_dict.get(BLESSING_KEY, []))
        result[CANDIDATE_KEY] = candidates
        return result
