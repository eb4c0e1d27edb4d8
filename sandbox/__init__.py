"""Learner code (the exercises), run outside the server's process: ``policy`` says who may, ``runner`` runs it in a
bubblewrap + seccomp + rlimit sandbox, ``worker`` is the process inside."""
