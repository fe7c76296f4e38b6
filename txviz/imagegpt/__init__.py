"""Image GPT: digits as sequences of grey-level tokens, drawn pixel by pixel by a small GPT-2."""
