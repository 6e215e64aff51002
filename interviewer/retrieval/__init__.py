"""Retrieval: the bilingual segmenter, the offline embedding, the Chroma index and hybrid search."""
