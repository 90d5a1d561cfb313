"""Infrastructure every other part uses: errors, atomic writers, logs, seeds, threads, memory,
and what every release check shares (claims)."""
