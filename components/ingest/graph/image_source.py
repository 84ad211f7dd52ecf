"""Image folders as an ingestion source: one sub-folder per class, one file per record.

No TFX imports. The files are listed inside the Beam graph, by unit of a class folder
(convert.listing_units), and fused with the conversion (convert.ImagesToExamples): file names
are never a collection that the runner would hold or ship between stages. Input to score
(runner.py --score) is the images themselves, directly in the folder, with no classes.
"""
import os
from typing import Any, Dict, Optional, Tuple

from absl import logging
import apache_beam as beam

from core import inputs
from components.ingest.formats import images
from components.ingest.formats import files as files_
from components.ingest.formats.rules import IngestionError
from components.ingest.graph import convert, source, stats

# Raw pixels of an image we do not resize: typical PNG/JPEG compress about this much.
_RAW_GROWTH = 8


class ImageSource(source.Source):
    name = 'images'
    pattern = '*/*'            # <class>/<image>
    unlabelled_pattern = '*'   # images to score sit directly in the folder
    expected = 'one sub-folder per class holding its images'

    def holds_input(self, folder: str) -> bool:
        """Stops at the first class folder with a file in it (hidden ones aside)."""
        for name in files_.listdir(folder):  # names that are not UTF-8 too
            sub = os.path.join(folder, name)
            if not name.startswith('.') and files_.isdir(sub) and any(
                    not entry.startswith('.') for entry in files_.listdir(sub)):
                return True
        return False

    def check(self, options) -> Tuple[Tuple[bool, str], ...]:
        return ((bool(options.classes) != options.unlabelled,
                 'classes must not be empty (and are none for unlabelled images)'),)

    def list_input(self, root: str, label_column: str, feature_types: Dict[str, str],
                   drop_columns: Tuple[str, ...], encoding: str,
                   unlabelled: bool) -> Dict[str, Any]:
        if unlabelled:  # the images themselves, directly in root
            if not files_.isdir(root):
                raise IngestionError(f'Input folder does not exist: {root}')
            return {}
        try:
            return {'classes': tuple(images.list_classes(root))}
        except (FileNotFoundError, ValueError) as error:
            raise IngestionError(f'Input is empty or missing: {error}') from None

    def estimated_output_bytes(self, options) -> int:
        # One class folder at a time: only the largest folder's listing is ever held.
        totals = [source.total_bytes(os.path.join(options.root, name, '*'))
                  for name in options.classes]
        count, size = sum(t[0] for t in totals), sum(t[1] for t in totals)
        if options.image_storage == 'raw':
            if options.image_size:
                return (count * options.image_size[0] * options.image_size[1]
                        * (options.channels or 3))  # 0 = each its own: at most 3
            return size * _RAW_GROWTH
        return size

    def estimated_records(self, options) -> int:
        # The files listed, one per record: the ones later quarantined included.
        return sum(source.total_bytes(os.path.join(options.root, name, '*'))[0]
                   for name in options.classes)

    def read(self, pipeline, options, temp_dir: str):
        # Create redistributes the listing units over workers. Unlabelled: one unit, ''
        # (the images sit directly in root).
        return (
            pipeline
            | 'ListingUnits' >> beam.Create(convert.listing_units(
                ('',) if options.unlabelled else options.classes))
            | 'ListFiles' >> beam.FlatMap(
                lambda unit: convert.chunks(convert.list_unit(unit, options.root)))
            | 'ToExamples' >> beam.ParDo(convert.ImagesToExamples(options, temp_dir)).with_outputs(
                convert.QUARANTINE_TAG, main='parts'))

    def describe(self, options, result, summary: Optional[dict]) -> Dict[str, Any]:
        """The class names, the input spec and the train images' stored sizes and modes."""
        raw = options.image_storage == 'raw'
        # Raw pixels with channels 0 keep each image's own: read per example then.
        spec = inputs.InputSpec(kind='image', storage=options.image_storage,
                                channels=options.channels if raw else 0)
        shapes = stats.read_image_shapes(result)
        logging.info('Train images as stored: sizes %s, modes %s, %d colour',
                     shapes['image_sizes'], shapes['color_modes'], shapes['color_images'])
        return dict(shapes, class_names=list(options.classes), input_spec=spec)
