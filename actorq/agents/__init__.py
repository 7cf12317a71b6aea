"""Agents: one package each (config, networks, learning, acting, builder), as in Acme."""
