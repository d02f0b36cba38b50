"""Agent system prompts generated from the contract (spec §17), public in :mod:`..prompts`.

One module per concern: :mod:`.notation` writes a type as the short JSON
notation a prompt shows, :mod:`.rules` is the table of rules (each one tied to
what a parser or gatekeeper enforces, with its sentence per locale),
:mod:`.agents` says for every agent what it receives and returns, and
:mod:`.examples` builds each agent's example input and reply from typed
values; :mod:`.render` puts them together.
"""
