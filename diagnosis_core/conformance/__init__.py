"""The conformance kit: one contract, checked against any implementation (spec §9).
"""

from ._corpus import PROTOCOL_VERSION, Case, document_text, load_corpus
from ._document import RESUME_FORMAT, run_document, run_document_line

__all__ = [
    "PROTOCOL_VERSION",
    "RESUME_FORMAT",
    "Case",
    "document_text",
    "load_corpus",
    "run_document",
    "run_document_line",
]
