"""The fleet's Slurm backend: a "host" of the inventory that names Slurm options
(``cltui_slurm_partition``, ``_gres``, ``_constraint``, ... or ``cltui fleet --slurm``) is one
GPU kind of a cluster.  ``spec`` (those options, read and checked), ``queue`` (one job per
kind: submitted, watched in the queue, its commands run as job steps, cancelled at the end)
and the staging of the bundle once on the shared file system.  The per-kind run itself is
:class:`cltui.fleet.host.HostRunner`'s, so the columns, faults and reports are the ssh
hosts' own."""
