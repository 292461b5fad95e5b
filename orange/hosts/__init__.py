"""Several machines (DESIGN §11): other hosts this host drives over SSH.

Hosts are this host's own configuration (`orange.hosts.roster`), never in the ref.
What a host reports about itself (`orange.hosts.probe`), starting or moving a task
there (`orange.hosts.start`), reaching its session (`orange.hosts.reach`).
"""
