"""Names shared by the plugin and its tests: options, stash keys, property names."""

from __future__ import annotations

MODEL_OPTION = "--tom-model"
BENCHMARK_OPTION = "--tom-benchmark"
DATA_DIR_OPTION = "--tom-data-dir"
CACHE_DIR_OPTION = "--tom-cache-dir"
NO_CACHE_OPTION = "--tom-no-cache"
DOWNLOAD_OPTION = "--tom-download"
SAMPLE_OPTION = "--tom-sample"
SEED_OPTION = "--tom-seed"
REPORT_OPTION = "--tom-report"
BATCH_SIZE_OPTION = "--tom-batch-size"
MAX_ERRORS_OPTION = "--tom-max-errors"

DATA_DIR_ENV = "TOM_DATA_DIR"
CACHE_DIR_ENV = "TOM_CACHE_DIR"

RECORD_PROPERTY = "tom"
"""Key of the user_properties entry holding an item's result record (it crosses xdist)."""

REPORT_SCHEMA_VERSION = "1.1"
