"""Passages, retrievers (BM25, dense, hybrid) and the knowledge graph."""
