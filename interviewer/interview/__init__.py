"""The interview: the session's state and engine, follow-ups, the review schedule, the store and reports."""
