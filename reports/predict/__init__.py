"""`predict`: the cost of a collective at sizes and group sizes not measured, from this cluster's own `collectives`
results: the measured series (series), the alpha-beta fit of each (fit), the algorithm-aware form that carries a fit to
other group sizes (formulas), and the command line (commands); a layout's training step (issue #41): every rank's
one-step schedule from its plan (`train --plan N`; schedule: the events, read and checked) replayed (replay) over
compute rates from a one-process run (compute) and the fitted collectives (step_costs), by `predict train`
(train_command), with what-ifs and a target's needs (what_if), written as a `train_prediction` result
(prediction_record)."""

BUILT_ON: tuple[str, ...] = ()
