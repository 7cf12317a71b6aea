"""What PPO and A2C share: unrolls, the policy heads' densities, GAE, observation
normalization, reward scaling and the learner core that corrects for quantized actors."""
