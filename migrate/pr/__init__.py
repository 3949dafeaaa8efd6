"""`tpu-migrate apply --branch`: the migration as a git branch with one commit per rule, a pull-request
description rendered from a jinja2 template, optionally verified on the CPU and opened with `gh`.

``git`` runs git, ``commits`` splits the migration into per-rule commits, ``body`` renders the
description, ``gh`` opens the pull request, ``command`` ties them together for the CLI.
"""
