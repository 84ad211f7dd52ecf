"""Which spans make up a run's training window, and their window entries (no TFX imports).

The window is the newest span (the one the driver resolved) and up to `window - 1` span folders
before it, oldest first. An older span folder that is empty is left out with a warning (there is
nothing to lose), and so is one whose classes are not the newest span's: the label is an index
into the sorted class names, so such a span would teach wrong labels. What was left out, and why,
is recorded on the Examples as `window_note` and shown in the run summary.
"""
import json
import os
from typing import Any, Dict, Iterator, List, Tuple

from absl import logging

from core import image_shape, window
from core import properties as property_names
from components.ingest.spans import listing
from components.ingest.graph.params import IngestParams



def entry(span: int, uri: str, fingerprint: str, properties: Dict[str, Any]) -> window.SpanEntry:
    """The window entry of a span ingested into `uri`, from the properties ingestion recorded."""
    shapes = {name: json.loads(properties[name]) if name in properties else None
              for name in (image_shape.SIZES_PROPERTY, image_shape.MODES_PROPERTY)}
    return window.SpanEntry(span=span, uri=uri, fingerprint=fingerprint,
                            num_train=int(properties.get(property_names.NUM_WRITTEN_TRAIN, 0)),
                            num_eval=int(properties.get(property_names.NUM_WRITTEN_EVAL, 0)),
                            image_sizes=shapes[image_shape.SIZES_PROPERTY],
                            color_modes=shapes[image_shape.MODES_PROPERTY])


def older_spans(root: str, params: IngestParams, newest: int) -> Iterator[Tuple[int, str]]:
    """(span, folder) of the window's spans before the newest, oldest first; none when the
    input has no span folders (root is then the input base itself) or the window is 1."""
    if params.window <= 1 or not listing.SPAN_FOLDER.match(os.path.basename(root.rstrip('/'))):
        return
    folders = listing.span_folders(params.data_dir)
    for span in sorted(s for s in folders if s < newest)[-(params.window - 1):]:
        if listing.holds_input(folders[span], params.source):
            yield span, folders[span]
        else:
            logging.warning('Window: span folder %s is empty, left out', folders[span])


def same_classes(older: List[tuple], newest: tuple) -> Tuple[List[tuple], str]:
    """The older (entry, properties, ...) spans whose class names are the newest span's, and a
    note naming the others ('' when none was left out)."""
    key = property_names.CLASS_NAMES
    names = newest[1].get(key)
    kept = [span for span in older if span[1].get(key) == names]
    note = '; '.join(
        f'span {span[0].span} left out: its classes {json.loads(span[1][key])} are '
        f'not those of span {newest[0].span} {json.loads(names)}'
        for span in older if span[1].get(key) != names)
    return kept, note
