"""`compare`: match a candidate's records with a baseline's and decide pass, regression or inconclusive (compare,
with the effect and its interval); a machine's baseline runs over time (baselines); how often that decision is
right (calibration, `scripts/calibrate-compare.sh`)."""

BUILT_ON: tuple[str, ...] = ()
