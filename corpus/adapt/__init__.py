"""A relevance model adapted to one course's lectures (``aula adapt``): questions written for
the index's passages, hard negatives mined from it, the E5 model fine-tuned on them, and the
reranker search builds from the result."""
