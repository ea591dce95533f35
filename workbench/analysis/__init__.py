"""Analyses over stored runs and evals: where two runs part ways (:mod:`.diff`), and
whether the confidence signals nodes carry predict anything (:mod:`.calibration`)."""
