"""`predict`: the cost of a collective at sizes and group sizes not measured, from this cluster's own `collectives`
results: the measured series (series), the alpha-beta fit of each (fit), the algorithm-aware form that carries a fit to
other group sizes (formulas), and the command line (commands); a training step's time from every rank's one-step
schedule (schedule: the events, read and checked) replayed over such costs (replay). Layout prediction from a plan and
its command line (issue #41) are not here yet."""

BUILT_ON: tuple[str, ...] = ()
