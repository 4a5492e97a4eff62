"""Code mode: a model's ``import totem`` script run against a staged view of the project
(staging.py, runner.py, api.py, host.py)."""
