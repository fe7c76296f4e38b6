"""Lectures as files: ordered steps (a page, its link settings, talking points, a question) and the
predict-then-reveal questions whose truth the live model computes."""
