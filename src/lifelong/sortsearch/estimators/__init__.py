"""Estimators of a new model's accuracy from its outcomes on a few samples, given other models' full rows.

`base` defines the interface every estimator implements (`Estimator.plan(task) -> Plan`, `Plan.estimate(observed)
-> Estimate`) and the registry (entry points "lifelong.estimators", as third-party estimators register);
`protocol` compares them (`lifelong bench compare`).
"""
