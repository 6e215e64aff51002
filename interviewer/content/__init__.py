"""The content: the question bank and its rubrics, the knowledge passages, the glossary."""
