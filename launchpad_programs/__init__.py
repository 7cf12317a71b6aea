"""Programs of nodes (learner, actors, replay, evaluator) and the launchers that run them."""
