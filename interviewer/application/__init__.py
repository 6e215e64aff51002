"""What every face shares: plans, history, progress, follow-up wording and report files."""
